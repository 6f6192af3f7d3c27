#include "base/clock.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace magneton {
namespace {

int64_t Now(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

class RealClock final : public Clock {
 public:
  int64_t MonotonicNowNs() override { return Now(CLOCK_MONOTONIC); }
  int64_t ThreadCpuNowNs() override { return Now(CLOCK_THREAD_CPUTIME_ID); }
  int64_t ProcessCpuNowNs() override { return Now(CLOCK_PROCESS_CPUTIME_ID); }
  void SleepUntilNs(int64_t deadline_ns) override {
    timespec ts{};
    ts.tv_sec = deadline_ns / 1'000'000'000;
    ts.tv_nsec = deadline_ns % 1'000'000'000;
    // EINTR: a signal handler ran; the deadline is absolute, so sleep again.
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
};

}  // namespace

int64_t MonotonicNowNs() { return Now(CLOCK_MONOTONIC); }
int64_t ThreadCpuNowNs() { return Now(CLOCK_THREAD_CPUTIME_ID); }
int64_t ProcessCpuNowNs() { return Now(CLOCK_PROCESS_CPUTIME_ID); }

RealtimeOffset MeasureRealtimeOffset() {
  RealtimeOffset best{0, INT64_MAX};
  for (int i = 0; i < 5; ++i) {
    const int64_t r0 = Now(CLOCK_REALTIME);
    const int64_t m = Now(CLOCK_MONOTONIC);
    const int64_t r1 = Now(CLOCK_REALTIME);
    // A realtime step between the reads (NTP, settimeofday) widens the
    // bracket; the tightest try wins.
    const int64_t half = std::max<int64_t>((std::llabs(r1 - r0) + 1) / 2, 1);
    if (half < best.uncertainty_ns) best = {r0 + (r1 - r0) / 2 - m, half};
  }
  return best;
}

Clock& SystemClock() {
  // Never destroyed: a sampler thread may still read it during static destruction.
  static RealClock* clock = new RealClock;
  return *clock;
}

}  // namespace magneton
