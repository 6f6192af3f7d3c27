// _core functions for engines whose hook is Python (JAX): begin/end an op with
// its array arguments. Defined apart from core_module.cc to keep that small.
#pragma once

#include <nanobind/nanobind.h>

namespace magneton {
void RegisterArrayOps(nanobind::module_& m);
}  // namespace magneton
