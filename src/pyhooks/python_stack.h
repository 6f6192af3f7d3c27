// Walks the calling thread's Python frames in C++ (no `traceback` module) and
// interns them as a call path. Requires the GIL.
#pragma once

#include <cstdint>

namespace magneton {
class Recorder;

// The interned call path of the current Python stack, outermost frame first,
// or kNoId when this thread holds no Python frames. Frames inside magneton's
// own Python package are skipped so paths point at user code.
int64_t CurrentPythonCallPath(Recorder& recorder);

}  // namespace magneton
