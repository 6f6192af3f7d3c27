#include "fingerprint/assemble.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "fingerprint/order_stats.h"
#include "fingerprint/strong_part.h"
#include "fingerprint/value_grid.h"

namespace magneton::fingerprint_internal {
namespace {

void FillQuantiles(std::vector<double> finite, LayoutInvariantPart* out) {
  out->quantiles.fill(0);
  const size_t n = finite.size();
  if (n == 0) return;
  std::vector<int64_t> ranks;
  std::array<double, kFingerprintQuantiles> pos{};
  for (int i = 0; i < kFingerprintQuantiles; ++i) {
    pos[i] = (i + 0.5) / kFingerprintQuantiles * static_cast<double>(n - 1);
    const auto k = static_cast<int64_t>(std::floor(pos[i]));
    ranks.push_back(k);
    if (k + 1 < static_cast<int64_t>(n)) ranks.push_back(k + 1);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  const std::vector<double> picked = SelectOrderStatistics(&finite, ranks);
  auto at_rank = [&](int64_t k) {
    return picked[static_cast<size_t>(std::lower_bound(ranks.begin(), ranks.end(), k) - ranks.begin())];
  };
  for (int i = 0; i < kFingerprintQuantiles; ++i) {
    const auto k = static_cast<int64_t>(std::floor(pos[i]));
    const double frac = pos[i] - static_cast<double>(k);
    const double low = at_rank(k);
    const double hi = k + 1 < static_cast<int64_t>(n) ? at_rank(k + 1) : low;
    out->quantiles[i] = low + frac * (hi - low);
  }
}

// Both assemblies end here: the strong part from the grid's values (it needs
// clean arithmetic; NaN/Inf are compared by count), then every part rounded
// to its grid (the strong part's grids scale with the invariant part's rms).
void FinishStrongPart(const std::vector<double>& core, bool all_finite, const SampleGrid& grid,
                      const FingerprintOptions& options, Fingerprint* fp) {
  if (options.compute_strong && all_finite && !core.empty()) {
    fp->strong = ComputeStrongPart(core, grid.full_sizes, grid.core_sizes(), options);
  }
  RoundToGrids(fp);
}

}  // namespace

Fingerprint AssembleFingerprint(DType dtype, const MomentAccumulator& moments, std::vector<double> core,
                                const SampleGrid& grid, const FingerprintOptions& options) {
  Fingerprint fp;
  fp.dtype_class = ClassOf(dtype);
  moments.Finish(&fp.invariant);
  // The grid's values are the tensor's: with no NaN or Inf among these,
  // none among those (a copy, not a test a value).
  const bool none_nonfinite =
      fp.invariant.nan_count == 0 && fp.invariant.pos_inf_count == 0 && fp.invariant.neg_inf_count == 0;
  std::vector<double> finite;
  if (none_nonfinite) {
    finite = core;
  } else {
    finite.reserve(core.size());
    for (double v : core) {
      if (std::isfinite(v)) finite.push_back(v);
    }
  }
  const bool all_finite = finite.size() == core.size();
  fp.invariant.quantile_sample_size = grid.exact() ? 0 : static_cast<int64_t>(finite.size());
  FillQuantiles(std::move(finite), &fp.invariant);
  FinishStrongPart(core, all_finite, grid, options, &fp);
  return fp;
}

Fingerprint AssembleWithInvariant(DType dtype, const LayoutInvariantPart& invariant, const std::vector<double>& core,
                                  const SampleGrid& grid, const FingerprintOptions& options) {
  Fingerprint fp;
  fp.dtype_class = ClassOf(dtype);
  fp.invariant = invariant;  // on its grids already: rounding it again leaves it as it is
  const bool all_finite = std::all_of(core.begin(), core.end(), [](double v) { return std::isfinite(v); });
  FinishStrongPart(core, all_finite, grid, options, &fp);
  return fp;
}

}  // namespace magneton::fingerprint_internal
