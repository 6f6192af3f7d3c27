// ComputeFingerprint: one full pass for moments, a small gathered grid for
// quantiles and the strong part.
#include <algorithm>
#include <cmath>

#include "fingerprint/moments.h"
#include "fingerprint/sample_grid.h"
#include "fingerprint/strided.h"
#include "fingerprint/strong_part.h"
#include "fingerprint/fingerprint.h"

namespace magneton {
namespace {

using namespace fingerprint_internal;

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

double LayoutInvariantPart::rms() const { return std::sqrt(mean * mean + variance); }

StatusOr<Fingerprint> ComputeFingerprint(const TensorBuffer& tensor, const FingerprintOptions& options) {
  if (!tensor.strides.empty() && tensor.strides.size() != tensor.shape.size()) {
    return InvalidArgument("fingerprint: strides have " + std::to_string(tensor.strides.size()) +
                           " entries for a rank-" + std::to_string(tensor.shape.size()) + " shape");
  }
  int64_t count = 1;
  for (int64_t s : tensor.shape) {
    if (s < 0) return InvalidArgument("fingerprint: negative dimension in shape");
    count *= s;
  }
  if (count > 0 && tensor.data == nullptr) return InvalidArgument("fingerprint: null data for a non-empty tensor");
  const std::vector<int64_t> strides = tensor.strides.empty() ? ContiguousStrides(tensor.shape) : tensor.strides;

  Fingerprint fp;
  fp.dtype_class = ClassOf(tensor.dtype);
  MomentAccumulator acc;
  if (count > 0) AccumulateMoments(tensor, CoalesceForTraversal(tensor.shape, strides), &acc);
  acc.Finish(&fp.invariant);

  const SampleGrid grid = MakeSampleGrid(tensor.shape, std::max<int64_t>(options.exact_max_elements, 1));
  std::vector<double> core = GatherGrid(tensor, strides, grid);
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

}  // namespace magneton
