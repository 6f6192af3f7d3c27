// Mapping ORT profile timestamps onto CLOCK_MONOTONIC (the op clock).
#include <time.h>

#include <algorithm>
#include <cstdlib>

#include "ort/ort.h"

namespace magneton::ort {
namespace {
int64_t Read(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

ClockOffset MeasureClockOffset() {
  ClockOffset best{0, INT64_MAX};
  for (int i = 0; i < 5; ++i) {
    int64_t r0 = Read(CLOCK_REALTIME);
    int64_t m = Read(CLOCK_MONOTONIC);
    int64_t r1 = Read(CLOCK_REALTIME);
    // A realtime step between the reads (NTP, settimeofday) widens the
    // bracket; the tightest try wins.
    int64_t half = std::max<int64_t>((std::abs(r1 - r0) + 1) / 2, 1);
    if (half < best.uncertainty_ns) best = {r0 + (r1 - r0) / 2 - m, half};
  }
  return best;
}

}  // namespace magneton::ort
