#include "fingerprint/assemble.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "fingerprint/strong_part.h"

namespace magneton::fingerprint_internal {
namespace {

// Selects the order statistics at `ranks` (ascending) in place: O(n log k).
void SelectRanks(std::vector<double>& v, size_t lo, size_t hi, const int64_t* rank_begin, const int64_t* rank_end) {
  if (rank_begin >= rank_end || lo >= hi) return;
  const int64_t* mid = rank_begin + (rank_end - rank_begin) / 2;
  std::nth_element(v.begin() + lo, v.begin() + *mid, v.begin() + hi);
  SelectRanks(v, lo, static_cast<size_t>(*mid), rank_begin, mid);
  SelectRanks(v, static_cast<size_t>(*mid) + 1, hi, mid + 1, rank_end);
}

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
  SelectRanks(finite, 0, n, ranks.data(), ranks.data() + ranks.size());
  for (int i = 0; i < kFingerprintQuantiles; ++i) {
    const auto k = static_cast<size_t>(std::floor(pos[i]));
    const double frac = pos[i] - static_cast<double>(k);
    const double hi = k + 1 < n ? finite[k + 1] : finite[k];
    out->quantiles[i] = finite[k] + frac * (hi - finite[k]);
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
  return fp;
}

}  // namespace magneton::fingerprint_internal
