// The last step of every fingerprint (internal): quantiles and the strong
// part from the sample grid's values, on top of the moments. The host path
// and the device path (value_parts.h) both end here, so from equal grid
// values they give equal quantiles and strong parts.
#pragma once

#include <vector>

#include "fingerprint/fingerprint.h"
#include "fingerprint/moments.h"
#include "fingerprint/sample_grid.h"

namespace magneton::fingerprint_internal {

// core: the grid's values in its row-major order (GatherGrid's order).
Fingerprint AssembleFingerprint(DType dtype, const MomentAccumulator& moments, std::vector<double> core,
                                const SampleGrid& grid, const FingerprintOptions& options);
// The same with the invariant part known (ComputeFingerprintWithInvariant):
// only the strong part is computed from the grid.
Fingerprint AssembleWithInvariant(DType dtype, const LayoutInvariantPart& invariant, const std::vector<double>& core,
                                  const SampleGrid& grid, const FingerprintOptions& options);

}  // namespace magneton::fingerprint_internal
