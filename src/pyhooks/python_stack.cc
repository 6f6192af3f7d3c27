#include "pyhooks/python_stack.h"

#include <Python.h>
#include <frameobject.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "magneton/recorder.h"

namespace magneton {
namespace {

constexpr int kMaxDepth = 128;

struct FrameKey {
  PyCodeObject* code;
  int lasti;
};

// Cache of a whole stack (by its code objects and instruction offsets) to the
// interned path, so the common case costs one walk and one hash lookup. The
// code objects are kept alive so that their addresses cannot be reused.
struct StackCache {
  uint64_t generation = 0;
  std::unordered_map<uint64_t, std::pair<std::vector<FrameKey>, int64_t>> paths;
  std::vector<PyObject*> kept_alive;
  std::unordered_map<PyCodeObject*, bool> skip;  // code in magneton's own package

  void Reset(uint64_t gen) {
    paths.clear();
    skip.clear();
    for (PyObject* o : kept_alive) Py_DECREF(o);
    kept_alive.clear();
    generation = gen;
  }
};

StackCache& Cache() {
  static StackCache* cache = new StackCache();  // leaked: lives until exit
  return *cache;
}

bool IsMagnetonCode(PyCodeObject* code) {
  auto& cache = Cache();
  auto it = cache.skip.find(code);
  if (it != cache.skip.end()) return it->second;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  bool skip = false;
  if (file) {
    std::string_view f(file);
    skip = f.find("/magneton/") != std::string_view::npos &&
           (f.find("site-packages/magneton/") != std::string_view::npos ||
            f.find("python/magneton/") != std::string_view::npos);
  } else {
    PyErr_Clear();
  }
  cache.skip.emplace(code, skip);
  return skip;
}

}  // namespace

int64_t CurrentPythonCallPath(Recorder& recorder) {
  // Ops on threads that do not hold the GIL (autograd or intra-op workers)
  // have no Python stack of their own.
  if (!PyGILState_Check()) return kNoId;
  PyThreadState* tstate = PyThreadState_Get();
  StackCache& cache = Cache();
  if (cache.generation != recorder.generation()) cache.Reset(recorder.generation());

  FrameKey keys[kMaxDepth];
  int depth = 0;
  uint64_t hash = 1469598103934665603ULL;
  PyFrameObject* frame = PyThreadState_GetFrame(tstate);  // new reference
  while (frame && depth < kMaxDepth) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    int lasti = PyFrame_GetLasti(frame);
    if (!IsMagnetonCode(code)) {
      keys[depth++] = {code, lasti};
      hash = (hash ^ reinterpret_cast<uintptr_t>(code)) * 1099511628211ULL;
      hash = (hash ^ static_cast<uint64_t>(lasti)) * 1099511628211ULL;
    }
    Py_DECREF(code);  // the frame holds it while we look
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  if (depth == 0) return kNoId;

  auto it = cache.paths.find(hash);
  if (it != cache.paths.end()) {
    const auto& stored = it->second.first;
    bool same = stored.size() == static_cast<size_t>(depth);
    for (int i = 0; same && i < depth; ++i) same = stored[i].code == keys[i].code && stored[i].lasti == keys[i].lasti;
    if (same) return it->second.second;
  }

  // Slow path: intern outermost first. Line numbers come from the code
  // object's line table, which is why we cache by (code, lasti).
  int64_t path = kNoId;
  for (int i = depth - 1; i >= 0; --i) {
    PyCodeObject* code = keys[i].code;
    int line = PyCode_Addr2Line(code, keys[i].lasti);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const char* func = PyUnicode_AsUTF8(code->co_qualname ? code->co_qualname : code->co_name);
    if (!file || !func) PyErr_Clear();
    int64_t frame_id = recorder.InternFrame(recorder.InternString(file ? file : "?"), line,
                                            recorder.InternString(func ? func : "?"));
    path = recorder.InternCallPath(path, frame_id);
  }
  std::vector<FrameKey> stored(keys, keys + depth);
  for (const FrameKey& k : stored) {
    Py_INCREF(reinterpret_cast<PyObject*>(k.code));
    cache.kept_alive.push_back(reinterpret_cast<PyObject*>(k.code));
  }
  cache.paths[hash] = {std::move(stored), path};
  return path;
}

}  // namespace magneton
