// ComputeFingerprint: one full pass for moments, a small gathered grid for
// quantiles and the strong part.
#include <algorithm>
#include <cmath>

#include "fingerprint/assemble.h"
#include "fingerprint/moments.h"
#include "fingerprint/sample_grid.h"
#include "fingerprint/strided.h"
#include "fingerprint/fingerprint.h"

namespace magneton {

using namespace fingerprint_internal;

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

  MomentAccumulator acc;
  if (count > 0) AccumulateMoments(tensor, CoalesceForTraversal(tensor.shape, strides), &acc);
  const SampleGrid grid = MakeSampleGrid(tensor.shape, std::max<int64_t>(options.exact_max_elements, 1));
  return AssembleFingerprint(tensor.dtype, acc, GatherGrid(tensor, strides, grid), grid, options);
}

}  // namespace magneton
