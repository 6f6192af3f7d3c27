#include "pyhooks/python_stack.h"

#include <frameobject.h>

// CPython 3.11 and 3.12 let us read interpreter frames directly, without
// materialising frame objects (which allocate and wake the GC on every op).
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
#define MAGNETON_DIRECT_FRAMES 1
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#else
#define MAGNETON_DIRECT_FRAMES 0
#endif

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "magneton/recorder.h"

namespace magneton {
namespace {

constexpr int kMaxDepth = 256;

struct FrameKey {
  PyCodeObject* code;
  int lasti_bytes;
  PyObject* module;  // the module being called, for module-call frames
};

struct CachedStack {
  std::vector<FrameKey> keys;
  PythonContext context;
};

// Whole stacks (code, instruction offset, module) -> interned context, so the
// common case is one walk and one lookup. Everything referenced by the cache
// is kept alive so that its address cannot be reused by another object.
struct StackCache {
  std::mutex mu;
  uint64_t generation = 0;
  std::unordered_map<uint64_t, CachedStack> stacks;
  std::unordered_map<PyCodeObject*, bool> skip;  // code in magneton's own package or a skipped path
  std::vector<std::string> skipped_paths;         // engine internals (jax/_src/...), see AddSkippedCodePath
  std::vector<PyObject*> kept_alive;
  std::vector<PyObject*> module_codes;  // strong references
  PyObject* namer = nullptr;            // strong reference
};

StackCache& Cache() {
  static StackCache* cache = new StackCache();  // leaked: lives until exit
  return *cache;
}

bool IsModuleCode(const StackCache& cache, PyCodeObject* code) {
  return std::find(cache.module_codes.begin(), cache.module_codes.end(), reinterpret_cast<PyObject*>(code)) !=
         cache.module_codes.end();
}

// Requires the GIL.
bool IsMagnetonCode(StackCache& cache, PyCodeObject* code) {
  auto it = cache.skip.find(code);
  if (it != cache.skip.end()) return it->second;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  bool skip = false;
  if (file) {
    std::string_view f(file);
    skip = f.find("site-packages/magneton/") != std::string_view::npos ||
           f.find("python/magneton/") != std::string_view::npos;
    for (const std::string& path : cache.skipped_paths) skip = skip || f.find(path) != std::string_view::npos;
  } else {
    PyErr_Clear();
  }
  cache.skip.emplace(code, skip);
  return skip;
}

#if MAGNETON_DIRECT_FRAMES
PyObject* FirstLocal(_PyInterpreterFrame* f) {
  if (f->f_code->co_argcount < 1) return nullptr;
  PyObject* obj = f->localsplus[0];
  if (obj && PyCell_Check(obj)) obj = PyCell_GET(obj);
  return obj;
}
#endif

// Innermost first. Module codes are read under the cache lock by the caller.
int WalkFrames(const StackCache& cache, PyThreadState* tstate, FrameKey* keys) {
  int depth = 0;
#if MAGNETON_DIRECT_FRAMES
  for (_PyInterpreterFrame* f = tstate->cframe->current_frame; f && depth < kMaxDepth; f = f->previous) {
#if PY_VERSION_HEX >= 0x030C0000
    if (f->owner == FRAME_OWNED_BY_CSTACK) continue;
#endif
    if (_PyFrame_IsIncomplete(f)) continue;
    PyObject* module = IsModuleCode(cache, f->f_code) ? FirstLocal(f) : nullptr;
    keys[depth++] = {f->f_code, _PyInterpreterFrame_LASTI(f) * static_cast<int>(sizeof(_Py_CODEUNIT)), module};
  }
#else
  // Portable path (needs the GIL): frame objects through the public API.
  PyFrameObject* frame = PyThreadState_GetFrame(tstate);
  while (frame && depth < kMaxDepth) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    PyObject* module = nullptr;
    if (IsModuleCode(cache, code)) {
      PyObject* locals = PyFrame_GetLocals(frame);
      if (locals) {
        PyObject* self = PyMapping_GetItemString(locals, "self");
        if (self) {
          module = self;
          Py_DECREF(self);  // the frame keeps it alive while we look
        } else {
          PyErr_Clear();
        }
        Py_DECREF(locals);
      } else {
        PyErr_Clear();
      }
    }
    keys[depth++] = {code, PyFrame_GetLasti(frame), module};
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
#endif
  return depth;
}

uint64_t HashKeys(const FrameKey* keys, int depth) {
  uint64_t hash = 1469598103934665603ULL;
  for (int i = 0; i < depth; ++i) {
    hash = (hash ^ reinterpret_cast<uintptr_t>(keys[i].code)) * 1099511628211ULL;
    hash = (hash ^ static_cast<uint64_t>(keys[i].lasti_bytes)) * 1099511628211ULL;
    hash = (hash ^ reinterpret_cast<uintptr_t>(keys[i].module)) * 1099511628211ULL;
  }
  return hash;
}

// The call path of a module's construction as the namer gives it: a sequence
// of (file, line, function), outermost first. kNoId when malformed.
int64_t InternOriginPath(Recorder& rec, PyObject* frames) {
  PyObject* seq = PySequence_Fast(frames, "frames");
  if (!seq) {
    PyErr_Clear();
    return kNoId;
  }
  int64_t path = kNoId;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* f = PySequence_Fast_GET_ITEM(seq, i);
    const char* file = nullptr;
    const char* func = nullptr;
    long line = 0;
    if (!PyTuple_Check(f) || !PyArg_ParseTuple(f, "sls", &file, &line, &func)) {
      PyErr_Clear();
      path = kNoId;
      break;
    }
    path = rec.InternCallPath(path, rec.InternFrame(rec.InternString(file), line, rec.InternString(func)));
  }
  Py_DECREF(seq);
  return path;
}

// The namer returns the scope's name, or (name, construction frames,
// constructor arguments as JSON) for a module whose construction it saw
// (docs/TRACE_FORMAT.md "Scope origins").
std::string ModuleName(Recorder& rec, StackCache& cache, PyObject* parent, PyObject* module, int64_t* init_path,
                       std::string* init_args) {
  if (cache.namer) {
    PyObject* name = PyObject_CallFunctionObjArgs(cache.namer, parent ? parent : Py_None, module, nullptr);
    if (name && PyUnicode_Check(name)) {
      std::string out = PyUnicode_AsUTF8(name);
      Py_DECREF(name);
      return out;
    }
    if (name && PyTuple_Check(name) && PyTuple_GET_SIZE(name) == 3 && PyUnicode_Check(PyTuple_GET_ITEM(name, 0)) &&
        PyUnicode_Check(PyTuple_GET_ITEM(name, 2))) {
      std::string out = PyUnicode_AsUTF8(PyTuple_GET_ITEM(name, 0));
      *init_path = InternOriginPath(rec, PyTuple_GET_ITEM(name, 1));
      const char* args = PyUnicode_AsUTF8(PyTuple_GET_ITEM(name, 2));
      if (args) *init_args = args;
      Py_DECREF(name);
      PyErr_Clear();
      return out;
    }
    Py_XDECREF(name);
    PyErr_Clear();
  }
  return Py_TYPE(module)->tp_name;
}

// Requires the GIL. Interns outermost first, skipping magneton's frames.
PythonContext InternStack(Recorder& rec, StackCache& cache, const FrameKey* keys, int depth) {
  PythonContext ctx{kNoId, kNoId};
  PyObject* parent_module = nullptr;
  for (int i = depth - 1; i >= 0; --i) {
    PyCodeObject* code = keys[i].code;
    if (keys[i].module) {
      int64_t init_path = kNoId;
      std::string init_args;
      std::string name = ModuleName(rec, cache, parent_module, keys[i].module, &init_path, &init_args);
      const char* type = Py_TYPE(keys[i].module)->tp_name;
      const char* dot = std::strrchr(type, '.');
      ctx.scope_id = rec.InternScope(ctx.scope_id, name, dot ? dot + 1 : type, init_path, init_args);
      parent_module = keys[i].module;
    }
    if (IsMagnetonCode(cache, code)) continue;
    int line = PyCode_Addr2Line(code, keys[i].lasti_bytes);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (!file) PyErr_Clear();
    const char* func = PyUnicode_AsUTF8(code->co_qualname);
    if (!func) PyErr_Clear();
    int64_t frame_id =
        rec.InternFrame(rec.InternString(file ? file : "?"), line, rec.InternString(func ? func : "?"));
    ctx.call_path_id = rec.InternCallPath(ctx.call_path_id, frame_id);
  }
  return ctx;
}

void ResetLocked(StackCache& cache, uint64_t generation) {
  cache.stacks.clear();
  cache.skip.clear();
  for (PyObject* o : cache.kept_alive) Py_DECREF(o);
  cache.kept_alive.clear();
  cache.generation = generation;
}

}  // namespace

void AddModuleCallCode(PyObject* code) {
  StackCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  Py_INCREF(code);
  cache.module_codes.push_back(code);
  cache.stacks.clear();
}

void AddSkippedCodePath(std::string_view path_part) {
  StackCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.skipped_paths.emplace_back(path_part);
  cache.skip.clear();
  cache.stacks.clear();
}

void SetScopeNamer(PyObject* namer) {
  StackCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  Py_XINCREF(namer);
  Py_XDECREF(cache.namer);
  cache.namer = namer;
  cache.stacks.clear();
}

void ClearModuleScopes() {
  StackCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  for (PyObject* o : cache.module_codes) Py_DECREF(o);
  cache.module_codes.clear();
  Py_XDECREF(cache.namer);
  cache.namer = nullptr;
  cache.skipped_paths.clear();
  ResetLocked(cache, 0);
}

PythonContext CurrentPythonContext(Recorder& rec) {
  if (!Py_IsInitialized()) return {kNoId, kNoId};
  PyThreadState* tstate = PyGILState_GetThisThreadState();
  if (!tstate) return {kNoId, kNoId};  // a thread Python has never seen
  StackCache& cache = Cache();

  FrameKey keys[kMaxDepth];
  int depth = 0;
  uint64_t hash = 0;
  if (MAGNETON_DIRECT_FRAMES) {
    std::lock_guard<std::mutex> lock(cache.mu);
    depth = WalkFrames(cache, tstate, keys);
    if (depth == 0) return {kNoId, kNoId};
    hash = HashKeys(keys, depth);
    if (cache.generation == rec.generation()) {
      auto it = cache.stacks.find(hash);
      if (it != cache.stacks.end() && it->second.keys.size() == static_cast<size_t>(depth)) {
        const auto& stored = it->second.keys;
        bool same = true;
        for (int i = 0; same && i < depth; ++i) {
          same = stored[i].code == keys[i].code && stored[i].lasti_bytes == keys[i].lasti_bytes &&
                 stored[i].module == keys[i].module;
        }
        if (same) return it->second.context;
      }
    }
  }

  // A stack not seen before: take the GIL to read names and line numbers
  // (never during interpreter shutdown, when taking it can block forever).
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return {kNoId, kNoId};
#else
  if (_Py_IsFinalizing()) return {kNoId, kNoId};
#endif
  // The namer runs Python; an op it dispatches must not re-enter the walk.
  thread_local bool in_slow_path = false;
  if (in_slow_path) return {kNoId, kNoId};
  in_slow_path = true;
  PyGILState_STATE gil = PyGILState_Ensure();
  PythonContext ctx{kNoId, kNoId};
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (!MAGNETON_DIRECT_FRAMES) {
      depth = WalkFrames(cache, tstate, keys);
      hash = HashKeys(keys, depth);
    }
    if (cache.generation != rec.generation()) ResetLocked(cache, rec.generation());
    if (depth > 0) {
      ctx = InternStack(rec, cache, keys, depth);
      CachedStack entry{std::vector<FrameKey>(keys, keys + depth), ctx};
      for (const FrameKey& k : entry.keys) {
        Py_INCREF(reinterpret_cast<PyObject*>(k.code));
        cache.kept_alive.push_back(reinterpret_cast<PyObject*>(k.code));
        if (k.module) {
          Py_INCREF(k.module);
          cache.kept_alive.push_back(k.module);
        }
      }
      cache.stacks[hash] = std::move(entry);
    }
  }
  PyGILState_Release(gil);
  in_slow_path = false;
  return ctx;
}

}  // namespace magneton
