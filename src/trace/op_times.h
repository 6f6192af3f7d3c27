// Times derived from the op tree of a trace.
#pragma once

#include <cstdint>
#include <vector>

#include "magneton/trace.h"

namespace magneton {

// Each op's exclusive time (its duration minus its nested ops'), by index
// into trace.ops.
std::vector<int64_t> SelfTimesNs(const Trace& trace);

}  // namespace magneton
