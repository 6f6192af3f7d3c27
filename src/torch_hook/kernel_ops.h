// Ops begun outside the dispatcher: the kernels of a torch.compile'd program
// (Inductor's generated C++ and Triton kernels), which the RecordFunction
// callback never sees. Their tensors are converted exactly as an ATen op's
// (shape, dtype, strides, storage identity, --values fingerprints).
#pragma once

#include <ATen/core/Tensor.h>
#include <nanobind/nanobind.h>

#include <cstdint>

#include "pyhooks/python_stack.h"

namespace magneton {
class Recorder;

// torch_hook.cc: one tensor of the current op, as the RecordFunction hook adds it.
// is_view: an output that aliases an input without writing it (a view op's).
void AddTorchTensor(Recorder& rec, bool output, int32_t slot, const at::Tensor& t, bool is_view = false);
// torch_hook.cc: what a top-level op takes from the thread (Python call path
// and scope, the torch runtime state stamp), counted as a recorded op.
PythonContext TopLevelContext(Recorder& rec);

// Whether this thread is inside an opaque op (a compile region): the ops
// nested in it are not recorded, only its time (kernel_ops.cc).
bool InOpaqueOp();

// begin_kernel_op / end_kernel_op on the `_torch_hook` module.
void RegisterKernelOps(nanobind::module_& m);

}  // namespace magneton
