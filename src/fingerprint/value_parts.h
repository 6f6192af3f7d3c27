// A fingerprint from parts computed where the values live (GPU memory), so
// that only a few scalars and the sample grid travel, never the tensor:
//   * moments of blocks of the values (fp64 reductions on the device), and
//   * the values at the sample grid's positions (an indexed gather there).
// The host path (ComputeFingerprint) finishes through the same code from the
// same grid, so quantiles and the strong part agree exactly with it and the
// moments up to fp64 summation order (docs/TRACE_FORMAT.md, "Device
// fingerprints").
#pragma once

#include <cstdint>
#include <vector>

#include "fingerprint/fingerprint.h"
#include "magneton/status.h"

namespace magneton {

// Moments of one block of values, all in fp64; non-finite values are counted
// and left out of the rest.
struct BlockMoments {
  int64_t count = 0;  // every value of the block, finite or not
  int64_t nan_count = 0;
  int64_t pos_inf_count = 0;
  int64_t neg_inf_count = 0;
  double mean = 0;                // over the finite values
  double m2 = 0, m3 = 0, m4 = 0;  // central power sums over the finite values
  double min = 0, max = 0;        // over the finite values (ignored when there are none)
};

// What the device is asked for: the sample grid as per-axis offsets into the
// tensor's values in row-major (logical) order. The grid's linear index of
// element (i_0, ..., i_k) is axis_offsets[0][i_0] + ... + axis_offsets[k][i_k],
// enumerated with the last axis fastest: the order the host path reads it.
struct DeviceValueRequest {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> axis_offsets;  // one per axis of size > 1; empty for a scalar
  int64_t grid_elements = 0;                       // the product of the axis_offsets sizes (1 for a scalar)
  // Largest block (elements) a device reduction should take at once: bounds
  // the fp64 temporaries it allocates next to the program's tensors.
  int64_t max_block_elements = int64_t{1} << 22;
};

struct DeviceValueParts {
  std::vector<BlockMoments> blocks;  // together, every value once
  std::vector<double> grid_values;   // DeviceValueRequest::grid_elements values, in its order
};

// The request for a tensor of `shape` fingerprinted with `options`.
DeviceValueRequest MakeDeviceValueRequest(const std::vector<int64_t>& shape, const FingerprintOptions& options);

// The fingerprint of a tensor from its parts. InvalidArgument when the parts
// cannot be the tensor's (counts or grid size off): a device result is
// checked, never trusted.
StatusOr<Fingerprint> FingerprintFromParts(DType dtype, const DeviceValueRequest& request,
                                           const DeviceValueParts& parts, const FingerprintOptions& options);

}  // namespace magneton
