#include "base/clock.h"

#include <time.h>

namespace magneton {
namespace {

int64_t Now(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int64_t MonotonicNowNs() { return Now(CLOCK_MONOTONIC); }
int64_t ThreadCpuNowNs() { return Now(CLOCK_THREAD_CPUTIME_ID); }
int64_t ProcessCpuNowNs() { return Now(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace magneton
