// magneton._core.OrtSession (src/bindings/ort_bindings.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace magneton {
void RegisterOrtBindings(nanobind::module_& m);
}
