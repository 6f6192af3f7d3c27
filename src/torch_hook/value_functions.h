// The --values functions of magneton._torch_hook: the device fingerprint
// mode, CUDA graph capture notes, and the fingerprint a tensor would get
// through either path (for tests and bench/gpu_check, which compare them).
#pragma once

#include <nanobind/nanobind.h>

namespace magneton {

void DefineValueFunctions(nanobind::module_& m);

}  // namespace magneton
