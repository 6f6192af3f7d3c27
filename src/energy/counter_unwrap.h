// Turns successive raw readings of a wrapping energy counter into one
// monotonic cumulative value.
#pragma once

#include <cstdint>

namespace magneton::energy {

class CounterUnwrapper {
 public:
  // range_uj: the counter counts 0..range_uj then restarts at 0
  // (RAPL's max_energy_range_uj). 0: unknown range, so a decrease is taken
  // as a reset to 0 (an NVML driver reload) and only the new value is added.
  explicit CounterUnwrapper(uint64_t range_uj = 0) : range_uj_(range_uj) {}

  // Returns the unwrapped cumulative value: the first raw reading plus every
  // increase since. Correct only if the counter wrapped at most once between
  // two calls: callers poll faster than MaxPollPeriodNs.
  double Feed(uint64_t raw_uj);
  int64_t wraps() const { return wraps_; }

 private:
  uint64_t range_uj_;
  bool has_previous_ = false;
  uint64_t previous_raw_ = 0;
  double total_uj_ = 0;
  int64_t wraps_ = 0;
};

// The longest poll period that cannot miss a wrap: half the time the counter
// needs to traverse its range at max_power_w. Half, so a late wake-up of the
// polling thread still leaves margin.
int64_t MaxPollPeriodNs(uint64_t range_uj, double max_power_w);

}  // namespace magneton::energy
