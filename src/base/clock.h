// The clocks Magneton reads, in one place: the trace clock (public,
// magneton/clock.h) and the CPU-time clocks the energy estimate uses.
#pragma once

#include <cstdint>

#include "magneton/clock.h"

namespace magneton {

int64_t ThreadCpuNowNs();   // CLOCK_THREAD_CPUTIME_ID: the calling thread
int64_t ProcessCpuNowNs();  // CLOCK_PROCESS_CPUTIME_ID: all threads of the process

}  // namespace magneton
