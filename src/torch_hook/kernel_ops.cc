// begin_kernel_op(name, inputs, params) / end_kernel_op(outputs): an op
// around one call of a compiled kernel (python/magneton/recorders/
// torch_compile_kernels.py wraps each kernel of a loaded Inductor wrapper).
// Tensors are unpacked here, not in Python, so a kernel's buffers become
// the same tensor rows an ATen op's would.
#include "torch_hook/kernel_ops.h"

#include <nanobind/stl/string_view.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>
#include <vector>

#include "magneton/recorder.h"
#include "trace/op_args.h"

namespace nb = nanobind;

namespace magneton {
namespace {

// The args of this thread's open kernel ops, innermost last, with the
// session they were begun in (a stop between begin and end drops the op).
struct PendingKernelOp {
  uint64_t generation;
  std::string args;
  bool opaque;
};
thread_local std::vector<PendingKernelOp> t_pending;
// Open opaque ops on this thread (InOpaqueOp).
thread_local int t_opaque_depth = 0;

// Scalars, strings and lists of them; anything else by its type's name.
void WriteParam(OpArgsWriter& w, PyObject* v, int depth) {
  if (v == Py_None) {
    w.Null();
  } else if (PyBool_Check(v)) {
    w.Bool(v == Py_True);
  } else if (PyLong_Check(v)) {
    const long long x = PyLong_AsLongLong(v);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      w.Typed(kArgRepr, "int");
    } else {
      w.Int(x);
    }
  } else if (PyFloat_Check(v)) {
    w.Float(PyFloat_AsDouble(v));
  } else if (PyUnicode_Check(v)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(v, &n);
    if (s == nullptr) {
      PyErr_Clear();
      w.Typed(kArgUnrecorded, "str");
    } else {
      w.String(std::string_view(s, static_cast<size_t>(n)));
    }
  } else if ((PyList_Check(v) || PyTuple_Check(v)) && depth < 4) {
    w.BeginList();
    PyObject* seq = PySequence_Fast(v, "");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; ++i) WriteParam(w, PySequence_Fast_GET_ITEM(seq, i), depth + 1);
    Py_DECREF(seq);
    w.EndList();
  } else {
    w.Typed(kArgUnrecorded, Py_TYPE(v)->tp_name);
  }
}

// {"args": [positional: {"t": slot} for tensors], <params...>}.
std::string KernelArgs(Recorder& rec, nb::handle inputs, nb::handle params) {
  std::string out;
  OpArgsWriter w(&out);
  w.BeginParams();
  w.Key("args");
  w.BeginList();
  int32_t slot = 0;
  PyObject* seq = PySequence_Fast(inputs.ptr(), "inputs must be a sequence");
  if (seq == nullptr) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    if (THPVariable_Check(item)) {
      const at::Tensor& t = THPVariable_Unpack(item);
      if (t.defined()) {
        AddTorchTensor(rec, /*output=*/false, slot, t);
        w.Tensor(slot);
      } else {
        w.Null();
      }
      ++slot;
    } else {
      WriteParam(w, item, 0);
    }
  }
  Py_DECREF(seq);
  w.EndList();
  if (params.is_valid() && PyDict_Check(params.ptr())) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(params.ptr(), &pos, &key, &value)) {
      if (!PyUnicode_Check(key)) continue;
      Py_ssize_t size = 0;
      const char* k = PyUnicode_AsUTF8AndSize(key, &size);
      if (k == nullptr) {
        PyErr_Clear();
        continue;
      }
      if (std::string_view(k, static_cast<size_t>(size)) == "args") continue;
      w.Key(std::string_view(k, static_cast<size_t>(size)));
      WriteParam(w, value, 0);
    }
  }
  w.EndParams();
  return out;
}

// call_path: (generation, id) from call_path_here, used instead of the
// stack's when it is of this session (a compile region takes the line that
// called torch.compile, where its options were chosen).
// opaque: the ops nested in this one are not recorded (a compile region:
// Dynamo's and AOT's tracing runs thousands of ATen ops on fake tensors,
// which are no values of the program and, as never-produced tensors, would
// pass for its model inputs; their time stays the region's).
bool BeginKernelOp(std::string_view name, nb::handle inputs, nb::handle params, nb::handle call_path, bool opaque) {
  if (t_opaque_depth > 0) return false;
  Recorder::Ref rec;
  if (!rec || !rec->WindowOpen()) return false;
  PythonContext py{kNoId, kNoId};
  if (rec->OpDepth() == 0) {
    py = TopLevelContext(*rec);
    if (call_path.is_valid() && PyTuple_Check(call_path.ptr()) && PyTuple_GET_SIZE(call_path.ptr()) == 2) {
      const auto generation = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(call_path.ptr(), 0));
      const auto id = PyLong_AsLongLong(PyTuple_GET_ITEM(call_path.ptr(), 1));
      if (PyErr_Occurred()) {
        PyErr_Clear();
      } else if (generation == rec->generation()) {
        py.call_path_id = id;
      }
    }
  }
  rec->BeginOp(rec->InternString(name), py.call_path_id, py.scope_id);
  t_pending.push_back({rec->generation(), KernelArgs(*rec, inputs, params), opaque});
  if (opaque) ++t_opaque_depth;
  return true;
}

// outputs: the tensors the kernel wrote. Their version counters are bumped
// first: a kernel writes buffers in place without the counter an ATen
// in-place op bumps, and the recorder tells a new value from the old one
// on the same storage by that counter.
// params: when given, the op's args are these (what is known only at the
// end, a compile's recompilation reason), not begin's.
// written: false for an op that makes views of its inputs (no buffer is
// written): its outputs are recorded as views, so --values reuses the viewed
// value's fingerprint for the same view instead of reading it again (a
// transposed 50257 x 768 lm_head weight on every decode step).
void EndKernelOp(nb::handle outputs, nb::handle params, bool written) {
  if (t_pending.empty()) return;
  PendingKernelOp pending = std::move(t_pending.back());
  t_pending.pop_back();
  if (pending.opaque) --t_opaque_depth;
  Recorder::Ref rec;
  if (!rec || rec->generation() != pending.generation || rec->OpDepth() == 0) return;
  PyObject* seq = PySequence_Fast(outputs.ptr(), "outputs must be a sequence");
  if (seq == nullptr) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int32_t slot = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    if (!THPVariable_Check(item)) continue;
    const at::Tensor& t = THPVariable_Unpack(item);
    if (!t.defined()) continue;
    if (written && !t.is_inference()) t.unsafeGetTensorImpl()->bump_version();
    AddTorchTensor(*rec, /*output=*/true, slot++, t, /*is_view=*/!written);
  }
  Py_DECREF(seq);
  if (params.is_valid() && PyDict_Check(params.ptr())) pending.args = KernelArgs(*rec, nb::tuple(), params);
  rec->EndOp(std::move(pending.args));
}

}  // namespace

bool InOpaqueOp() { return t_opaque_depth > 0; }

void RegisterKernelOps(nb::module_& m) {
  m.def("call_path_here",
        []() -> nb::object {
          Recorder::Ref rec;
          if (!rec) return nb::none();
          const PythonContext py = CurrentPythonContext(*rec);
          return nb::make_tuple(rec->generation(), py.call_path_id);
        },
        "(session generation, call path id) of the calling Python stack, for begin_kernel_op's call_path; "
        "None when nothing records.");
  m.def("begin_kernel_op", &BeginKernelOp, nb::arg("name"), nb::arg("inputs"), nb::arg("params").none() = nb::none(),
        nb::arg("call_path").none() = nb::none(), nb::arg("opaque") = false,
        "Begins an op around one compiled-kernel call: inputs are its positional arguments (tensors become the "
        "op's input tensors, others its args), params a dict of scalars/strings/lists kept as its args. "
        "Returns whether an op was begun (then end_kernel_op must follow on this thread).");
  m.def("end_kernel_op", &EndKernelOp, nb::arg("outputs"), nb::arg("params").none() = nb::none(),
        nb::arg("written") = true,
        "Ends this thread's innermost kernel op with the tensors the kernel wrote as its outputs.");
}

}  // namespace magneton
