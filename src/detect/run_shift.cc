#include "detect/run_shift.h"

#include <algorithm>

namespace magneton::detect {

RunShift::RunShift(const DetectResult& run) {
  for (const Finding& f : run.findings) {
    if (!f.same_work) continue;
    for (const RegionInstance& in : f.instances) {
      for (const PairRatio& p : in.pair_ratios) {
        pairs_.push_back({p.log_ratio, p.energy_uj, &f});
        total_uj_ += p.energy_uj;
        total_sq_ += p.energy_uj * p.energy_uj;
      }
    }
  }
  std::sort(pairs_.begin(), pairs_.end(),
            [](const TaggedPair& x, const TaggedPair& y) { return x.log_ratio < y.log_ratio; });
}

std::optional<double> RunShift::LogShiftExcluding(const Finding* own) const {
  double total = total_uj_, sq = total_sq_;
  if (own != nullptr && own->same_work) {
    for (const RegionInstance& in : own->instances) {
      for (const PairRatio& p : in.pair_ratios) {
        total -= p.energy_uj;
        sq -= p.energy_uj * p.energy_uj;
      }
    }
  }
  // The same count as RunWideRatio's: (sum w)^2 / sum w^2 of at least 3.
  if (total <= 0 || sq <= 0 || total * total / sq + 1e-9 < 3) return std::nullopt;
  double seen = 0;
  for (const TaggedPair& p : pairs_) {
    if (own != nullptr && p.owner == own) continue;
    seen += p.energy_uj;
    if (seen >= total / 2) return p.log_ratio;
  }
  return std::nullopt;  // rounding left the half unreached: say nothing
}

}  // namespace magneton::detect
