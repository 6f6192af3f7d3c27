// The clocks Magneton reads, in one place: the trace clock (public,
// magneton/clock.h), the CPU-time clocks the energy estimate uses, and the
// same clocks behind an interface, so the sampler's schedule and the
// estimate model can be driven by a scripted clock in tests instead of
// asserting on how fast this machine happens to be.
#pragma once

#include <cstdint>

#include "magneton/clock.h"

namespace magneton {

int64_t ThreadCpuNowNs();   // CLOCK_THREAD_CPUTIME_ID: the calling thread
int64_t ProcessCpuNowNs();  // CLOCK_PROCESS_CPUTIME_ID: all threads of the process

// CLOCK_REALTIME − CLOCK_MONOTONIC: how a timestamp of a library that stamps
// with the realtime clock (ONNX Runtime's profile, Kineto's traces) maps onto
// the op clock. Measured as a monotonic read between two realtime reads, the
// tightest of five tries; uncertainty_ns is half that bracket (at least 1).
struct RealtimeOffset {
  int64_t realtime_minus_monotonic_ns = 0;
  int64_t uncertainty_ns = 0;
};
RealtimeOffset MeasureRealtimeOffset();

// Production code uses SystemClock(); methods may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t MonotonicNowNs() = 0;
  virtual int64_t ThreadCpuNowNs() = 0;  // of the calling thread
  virtual int64_t ProcessCpuNowNs() = 0;
  // Returns once the monotonic clock has reached `deadline_ns` (absolute).
  virtual void SleepUntilNs(int64_t deadline_ns) = 0;
};

// The functions above, and clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME).
Clock& SystemClock();

}  // namespace magneton
