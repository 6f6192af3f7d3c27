#include "energy/counter_unwrap.h"

#include <limits>

namespace magneton::energy {

double CounterUnwrapper::Feed(uint64_t raw_uj) {
  if (!has_previous_) {
    has_previous_ = true;
    total_uj_ = static_cast<double>(raw_uj);
  } else if (raw_uj >= previous_raw_) {
    total_uj_ += static_cast<double>(raw_uj - previous_raw_);
  } else if (range_uj_ > 0 && previous_raw_ <= range_uj_) {
    // Wrapped once: the rest of the range, then from 0 up to raw.
    total_uj_ += static_cast<double>(range_uj_ - previous_raw_) + static_cast<double>(raw_uj);
    ++wraps_;
  } else {
    total_uj_ += static_cast<double>(raw_uj);  // reset: it counted up from 0
    ++wraps_;
  }
  previous_raw_ = raw_uj;
  return total_uj_;
}

int64_t MaxPollPeriodNs(uint64_t range_uj, double max_power_w) {
  if (range_uj == 0 || max_power_w <= 0) return std::numeric_limits<int64_t>::max();
  // range_uj / (max_power_w W = max_power_w µJ/µs) = µs to traverse the range.
  double traverse_ns = static_cast<double>(range_uj) / max_power_w * 1e3;
  double half = traverse_ns / 2;
  if (half >= 9e18) return std::numeric_limits<int64_t>::max();
  return half < 1 ? 1 : static_cast<int64_t>(half);
}

}  // namespace magneton::energy
