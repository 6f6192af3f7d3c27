// Ops announced from Python, one call to begin and one to end each, with the
// op's array arguments (JAX Arrays, NumPy arrays) converted here: the hook in
// python/magneton/recorders/jax_recorder.py only passes the objects along.
#include "bindings/array_ops.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <string>
#include <unordered_map>

#include "magneton/recorder.h"
#include "pyhooks/array_view.h"
#include "pyhooks/python_stack.h"
#include "trace/op_args.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace magneton {
namespace {

// Interned op names and scope paths, per thread and per recording.
struct InternCache {
  uint64_t generation = 0;
  std::unordered_map<std::string, int64_t> names;
  std::unordered_map<std::string, int64_t> scopes;
};
thread_local InternCache t_cache;

InternCache& Cache(Recorder& rec) {
  if (t_cache.generation != rec.generation()) {
    t_cache = InternCache{};
    t_cache.generation = rec.generation();
  }
  return t_cache;
}

int64_t NameId(Recorder& rec, std::string_view name) {
  auto& names = Cache(rec).names;
  auto it = names.find(std::string(name));
  if (it == names.end()) it = names.emplace(std::string(name), rec.InternString(name)).first;
  return it->second;
}

// "outer/inner" -> nested scopes; "" -> none.
int64_t ScopeId(Recorder& rec, std::string_view path) {
  if (path.empty()) return kNoId;
  auto& scopes = Cache(rec).scopes;
  auto it = scopes.find(std::string(path));
  if (it != scopes.end()) return it->second;
  int64_t id = kNoId;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) {
      std::string_view part = path.substr(start, end - start);
      id = rec.InternScope(id, part, part);
    }
    start = end + 1;
  }
  scopes.emplace(std::string(path), id);
  return id;
}

// The call path `parent` with the frame (file, line, function) of `callee`
// appended; a malformed callee leaves the path as it is.
int64_t WithCallee(Recorder& rec, int64_t parent, nb::handle callee) {
  PyObject* t = callee.ptr();
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) return parent;
  PyObject *file = PyTuple_GET_ITEM(t, 0), *line = PyTuple_GET_ITEM(t, 1), *fn = PyTuple_GET_ITEM(t, 2);
  if (!PyUnicode_Check(file) || !PyLong_Check(line) || !PyUnicode_Check(fn)) return parent;
  const char* file_text = PyUnicode_AsUTF8(file);
  const char* fn_text = PyUnicode_AsUTF8(fn);
  const long long line_no = PyLong_AsLongLong(line);
  if (!file_text || !fn_text || PyErr_Occurred()) {
    PyErr_Clear();
    return parent;
  }
  const int64_t frame = rec.InternFrame(rec.InternString(file_text), line_no, rec.InternString(fn_text));
  return rec.InternCallPath(parent, frame);
}

void AddArrays(Recorder& rec, nb::handle arrays, bool output) {
  if (!arrays.is_valid() || arrays.is_none()) return;
  PyObject* seq = PySequence_Fast(arrays.ptr(), "arrays must be a sequence");
  if (!seq) throw nb::python_error();
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  ArrayView view;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!ArrayToView(items[i], rec.record_values(), /*block=*/output, &view)) continue;
    if (output) {
      rec.AddOutput(static_cast<int32_t>(i), view.view);
    } else {
      rec.AddInput(static_cast<int32_t>(i), view.view);
    }
  }
  Py_DECREF(seq);
}

// How a param value is recorded: JSON's own kinds, a dtype, one of JAX's
// enums (precision, rounding) by its printed text, or not at all
// (sub-programs, callables).
enum class ParamClass { kSkip, kPlain, kDtype, kEnum };

ParamClass Classify(PyObject* value) {
  if (value == Py_None || PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value) ||
      PyUnicode_Check(value) || PyTuple_Check(value)) {
    return ParamClass::kPlain;
  }
  PyObject* type_attr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(value)), "__name__");
  const char* t = type_attr && PyUnicode_Check(type_attr) ? PyUnicode_AsUTF8(type_attr) : nullptr;
  const std::string_view tn = t ? t : "";
  ParamClass c = ParamClass::kSkip;
  if (tn == "dtype" || tn.find("DType") != std::string_view::npos) c = ParamClass::kDtype;
  if (tn == "Precision" || tn == "GatherScatterMode" || tn == "RoundingMethod") c = ParamClass::kEnum;
  Py_XDECREF(type_attr);
  PyErr_Clear();
  return c;
}

// A param value as op-arguments JSON (trace/op_args.h): tuples as lists; a
// value inside a tuple that is not recorded, or one too big to be worth its
// bytes, says only its type ({"unrecorded": ...}).
void WriteParam(OpArgsWriter& w, PyObject* value, ParamClass c, int depth) {
  if (c == ParamClass::kDtype || c == ParamClass::kEnum) {
    PyObject* text = PyObject_Str(value);
    Py_ssize_t size = 0;
    const char* v = text ? PyUnicode_AsUTF8AndSize(text, &size) : nullptr;
    if (v && size <= 200) {
      w.Typed(c == ParamClass::kDtype ? kArgDtype : kArgRepr, std::string_view(v, size));
    } else {
      w.Typed(kArgUnrecorded, Py_TYPE(value)->tp_name);
    }
    Py_XDECREF(text);
    PyErr_Clear();
  } else if (c == ParamClass::kSkip) {
    w.Typed(kArgUnrecorded, Py_TYPE(value)->tp_name);
  } else if (value == Py_None) {
    w.Null();
  } else if (PyBool_Check(value)) {
    w.Bool(value == Py_True);
  } else if (PyLong_Check(value)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      w.Typed(kArgUnrecorded, "int beyond int64");
    } else {
      w.Int(v);
    }
  } else if (PyFloat_Check(value)) {
    w.Float(PyFloat_AS_DOUBLE(value));
  } else if (PyUnicode_Check(value)) {
    Py_ssize_t size = 0;
    const char* s = PyUnicode_AsUTF8AndSize(value, &size);
    if (!s || size > 200) {
      PyErr_Clear();
      w.Typed(kArgUnrecorded, s ? "str longer than 200 bytes" : "str");
    } else {
      w.String(std::string_view(s, size));
    }
  } else if (depth >= 4 || PyTuple_GET_SIZE(value) > 64) {
    w.Typed(kArgUnrecorded, "tuple");
  } else {
    w.BeginList();
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i) {
      PyObject* item = PyTuple_GET_ITEM(value, i);
      WriteParam(w, item, Classify(item), depth + 1);
    }
    w.EndList();
  }
}

// The scalar parameters of an op (axes, dtypes, precision) as a params
// object; sub-programs and other objects are left out.
std::string ParamsJson(nb::handle params) {
  std::string out;
  if (!params.is_valid() || !PyDict_Check(params.ptr())) return out;
  OpArgsWriter w(&out);
  w.BeginParams();
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(params.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_Check(key)) continue;
    const ParamClass c = Classify(value);
    if (c == ParamClass::kSkip) continue;
    Py_ssize_t size = 0;
    const char* k = PyUnicode_AsUTF8AndSize(key, &size);
    if (!k) {
      PyErr_Clear();
      continue;
    }
    w.Key(std::string_view(k, size));
    WriteParam(w, value, c, 0);
  }
  w.EndParams();
  return out;
}

}  // namespace

void RegisterArrayOps(nb::module_& m) {
  m.def("begin_array_op",
        [](std::string_view name, nb::handle inputs, std::string_view scope, nb::handle callee) -> int64_t {
          // Held for this call only: a stop before end_array_op drops the op.
          Recorder::Ref rec;
          if (!rec) return kNoId;
          // Ops nested in a recorded op inherit its call path, as in torch.
          PythonContext py{kNoId, kNoId};
          if (rec->OpDepth() == 0) {
            py = CurrentPythonContext(*rec);
            if (callee.is_valid() && !callee.is_none()) py.call_path_id = WithCallee(*rec, py.call_path_id, callee);
          }
          int64_t scope_id = scope.empty() ? py.scope_id : ScopeId(*rec, scope);
          const int64_t op_id = rec->BeginOp(NameId(*rec, name), py.call_path_id, scope_id);
          AddArrays(*rec, inputs, /*output=*/false);
          return op_id;
        },
        "name"_a, "inputs"_a, "scope"_a = "", "callee"_a = nb::none(),
        "Begins op `name` on this thread: call path from the Python stack, scope "
        "'outer/inner' (or none), inputs a sequence of arrays (other items are skipped "
        "but keep their slot). callee: (file, line, function) of the library function "
        "the op runs, whose frame the Python stack does not hold (a compiled call): "
        "appended as the call path's innermost frame. Returns the op's id (-1: not recording).");
  m.def("end_array_op",
        [](nb::handle outputs, nb::handle params) {
          // A session started since begin_array_op has no pending op here.
          Recorder::Ref rec;
          if (!rec || rec->OpDepth() == 0) return;
          AddArrays(*rec, outputs, /*output=*/true);
          rec->EndOp(ParamsJson(params));
        },
        "outputs"_a, "params"_a = nb::none(),
        "Ends this thread's innermost op: waits for each output array, records it, "
        "and stores the op's scalar parameters as its args.");
  // A jitted call's op ends at its dispatch and gets its outputs once they
  // are ready (jax_jit_recorder.py; Recorder::DetachOp).
  m.def("detach_array_op",
        [](int64_t start_ns, int64_t dispatched_ns) -> int64_t {
          Recorder::Ref rec;
          if (!rec || rec->OpDepth() == 0) return kNoId;
          return rec->DetachOp(start_ns, dispatched_ns);
        },
        "start_ns"_a = 0, "dispatched_ns"_a = 0,
        "Ends this thread's innermost op at once without outputs and takes it off the "
        "thread's stack; returns its id for finish_array_op (-1: none). start_ns / "
        "dispatched_ns (time.monotonic_ns()): when the call began and returned, for an "
        "op begun after it (0: the op's own begin, now).");
  m.def("reattach_array_op",
        [](int64_t op_id) {
          Recorder::Ref rec;
          return rec && op_id != kNoId && rec->ReattachOp(op_id);
        },
        "op_id"_a,
        "Puts an op detach_array_op took off back on this thread's stack (an op of the "
        "recorder's own, compilation, ran between them without nesting in it).");
  m.def("finish_array_op",
        [](int64_t op_id, nb::handle outputs, nb::handle params, std::string name, std::string module) {
          Recorder::Ref rec;
          if (!rec || op_id == kNoId || !rec->ReattachOp(op_id)) return;
          AddArrays(*rec, outputs, /*output=*/true);
          rec->HoldOp(ParamsJson(params), std::move(name), std::move(module));
        },
        "op_id"_a, "outputs"_a, "params"_a, "name"_a, "module"_a,
        "Gives a detached op its outputs (waiting for each) and scalar parameters; the op "
        "is kept, with its detached times, until write_held_ops or XLA's profile "
        "(ingest_xla_profile) writes it.");
  m.def("write_held_ops",
        []() {
          Recorder::Ref rec;
          if (rec) rec->WriteHeldOps();
        },
        "Writes the ops finish_array_op kept, with their dispatch times.");
  m.def("add_skipped_code_path", [](std::string_view part) { AddSkippedCodePath(part); },
        "part"_a, "Frames whose file path contains `part` are left out of call paths.");
}

}  // namespace magneton
