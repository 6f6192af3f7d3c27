// Walks the calling thread's Python frames in C++ (no `traceback` module):
// the call path (file:line:function, interned) and the nn.Module scope, both
// read off the same walk.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string_view>

namespace magneton {
class Recorder;

struct PythonContext {
  int64_t call_path_id;  // kNoId when the thread has no Python frames
  int64_t scope_id;      // innermost module scope on the stack, or kNoId
};

// Safe without the GIL: torch releases it around every ATen call, and this
// thread's frames cannot change while it runs C++. The GIL is taken only for
// a stack not seen before (to read line numbers and name modules). Frames in
// magneton's own package are left out so that paths end in user code.
PythonContext CurrentPythonContext(Recorder& recorder);

// Frames running `code` are module calls whose first local is the module
// (torch.nn.Module._wrapped_call_impl). Requires the GIL.
void AddModuleCallCode(PyObject* code);

// namer(parent_module_or_None, module) -> str names a module relative to the
// module whose call encloses it. Requires the GIL.
void SetScopeNamer(PyObject* namer);

// Frames whose file path contains `path_part` are left out of call paths, like
// magneton's own: engine internals between the user's line and the op (the
// dispatch machinery of jax/_src). Requires the GIL.
void AddSkippedCodePath(std::string_view path_part);

// Forgets module codes, the namer and skipped paths (when recording stops).
// Requires the GIL.
void ClearModuleScopes();

}  // namespace magneton
