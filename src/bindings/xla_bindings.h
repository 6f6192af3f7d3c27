// _core.ingest_xla_profile: XLA's profiler events of a JAX jit-mode recording
// into it (record/xla_profile.h). Apart from core_module.cc to keep that small.
#pragma once

#include <nanobind/nanobind.h>

namespace magneton {
void RegisterXlaBindings(nanobind::module_& m);
}  // namespace magneton
