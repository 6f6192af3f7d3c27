// The clock of every trace event: CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstdint>

namespace magneton {

int64_t MonotonicNowNs();

}  // namespace magneton
