#include "fingerprint/value_parts.h"

#include <string>

#include "fingerprint/assemble.h"
#include "fingerprint/moments.h"
#include "fingerprint/sample_grid.h"
#include "fingerprint/strided.h"

namespace magneton {

using namespace fingerprint_internal;

DeviceValueRequest MakeDeviceValueRequest(const std::vector<int64_t>& shape, const FingerprintOptions& options) {
  DeviceValueRequest request;
  request.shape = shape;
  const SampleGrid grid = MakeSampleGrid(shape, std::max<int64_t>(options.exact_max_elements, 1));
  // Row-major (logical) strides: the device gathers by logical index, so the
  // tensor's own strides (views, transposes, expands) never travel.
  const std::vector<int64_t> logical = ContiguousStrides(shape);
  request.grid_elements = grid.element_count();
  for (size_t k = 0; k < grid.axes.size(); ++k) {
    std::vector<int64_t> offsets;
    offsets.reserve(grid.positions[k].size());
    for (int64_t p : grid.positions[k]) offsets.push_back(p * logical[grid.axes[k]]);
    request.axis_offsets.push_back(std::move(offsets));
  }
  return request;
}

StatusOr<Fingerprint> FingerprintFromParts(DType dtype, const DeviceValueRequest& request,
                                           const DeviceValueParts& parts, const FingerprintOptions& options) {
  int64_t count = 1;
  for (int64_t s : request.shape) {
    if (s < 0) return InvalidArgument("fingerprint: negative dimension in shape");
    count *= s;
  }
  int64_t counted = 0;
  MomentAccumulator acc;
  for (const BlockMoments& b : parts.blocks) {
    if (b.count < 0 || b.nan_count < 0 || b.pos_inf_count < 0 || b.neg_inf_count < 0 ||
        b.nan_count + b.pos_inf_count + b.neg_inf_count > b.count) {
      return InvalidArgument("device fingerprint: a block's counts do not add up (" + std::to_string(b.count) +
                             " values, " + std::to_string(b.nan_count) + " NaN, " +
                             std::to_string(b.pos_inf_count + b.neg_inf_count) + " Inf)");
    }
    counted += b.count;
    acc.AddMoments(b);
  }
  if (counted != count) {
    return InvalidArgument("device fingerprint: the blocks hold " + std::to_string(counted) + " values, the tensor " +
                           std::to_string(count));
  }
  const SampleGrid grid = MakeSampleGrid(request.shape, std::max<int64_t>(options.exact_max_elements, 1));
  if (static_cast<int64_t>(parts.grid_values.size()) != grid.element_count()) {
    return InvalidArgument("device fingerprint: " + std::to_string(parts.grid_values.size()) +
                           " grid values for a grid of " + std::to_string(grid.element_count()));
  }
  return AssembleFingerprint(dtype, acc, parts.grid_values, grid, options);
}

}  // namespace magneton
