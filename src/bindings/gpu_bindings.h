// magneton._core's device-activity functions (src/bindings/gpu_bindings.cc):
// the clock reading taken around torch.profiler, and the ingest of its trace.
#pragma once

#include <nanobind/nanobind.h>

namespace magneton {
void RegisterGpuBindings(nanobind::module_& m);
}
