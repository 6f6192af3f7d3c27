// The clocks the energy layer reads, in one place.
#pragma once

#include <cstdint>

namespace magneton::energy {

int64_t MonotonicNowNs();     // CLOCK_MONOTONIC: the clock of every trace event
int64_t ThreadCpuNowNs();     // CLOCK_THREAD_CPUTIME_ID: the calling thread
int64_t ProcessCpuNowNs();    // CLOCK_PROCESS_CPUTIME_ID: all threads of the process

}  // namespace magneton::energy
