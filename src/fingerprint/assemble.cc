#include "fingerprint/assemble.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "fingerprint/order_stats.h"
#include "fingerprint/strong_part.h"

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

// A quantile, extreme, chunk sum or singular value rounded to the nearest
// float32 when that is a normal float (or zero). The comparison's tolerances
// are epsilon (1e-2 by default; 1e-5 the smallest the case suite is scored
// at) of a scale at least the statistic's own order, and float32 rounds by at
// most 6e-8 of it, so the mfp2 codec can store these in 4 bytes instead of 8
// without moving a verdict (docs/MATCHING.md, "Precision"). Out of float
// range, or below its normal range, the double stays: rounding would turn it
// into an infinity or lose its digits.
double NearestFloat(double v) {
  if (!std::isfinite(v)) return v;
  const double magnitude = std::fabs(v);
  if (magnitude > std::numeric_limits<float>::max()) return v;
  if (magnitude != 0 && magnitude < std::numeric_limits<float>::min()) return v;
  return static_cast<double>(static_cast<float>(v));
}

void RoundToFloat(Fingerprint* fp) {
  LayoutInvariantPart& p = fp->invariant;
  // The four moments stay fp64 (32 bytes): they are what a reader of the
  // fingerprint takes as its summary, and a 1e6 offset must not eat a
  // mean's fraction there.
  for (double* v : {&p.min, &p.max}) *v = NearestFloat(*v);
  for (double& q : p.quantiles) q = NearestFloat(q);
  for (AxisMarginal& m : fp->strong.marginals) {
    for (double& s : m.chunk_sums) s = NearestFloat(s);
  }
  for (UnfoldingSpectrum& u : fp->strong.spectra) {
    for (double& s : u.singular_values) s = NearestFloat(s);
  }
}

}  // namespace

Fingerprint AssembleFingerprint(DType dtype, const MomentAccumulator& moments, std::vector<double> core,
                                const SampleGrid& grid, const FingerprintOptions& options) {
  Fingerprint fp;
  fp.dtype_class = ClassOf(dtype);
  moments.Finish(&fp.invariant);
  std::vector<double> finite;
  finite.reserve(core.size());
  for (double v : core) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  const bool all_finite = finite.size() == core.size();
  fp.invariant.quantile_sample_size = grid.exact() ? 0 : static_cast<int64_t>(finite.size());
  FillQuantiles(std::move(finite), &fp.invariant);

  // The strong part needs clean arithmetic; NaN/Inf are compared by count.
  if (options.compute_strong && all_finite && !core.empty()) {
    fp.strong = ComputeStrongPart(core, grid.full_sizes, grid.core_sizes(), options);
  }
  RoundToFloat(&fp);
  return fp;
}

}  // namespace magneton::fingerprint_internal
