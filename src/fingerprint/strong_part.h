// The order-sensitive, permutation-invariant part of a fingerprint (internal).
#pragma once

#include <vector>

#include "fingerprint/fingerprint.h"

namespace magneton::fingerprint_internal {

// `core` holds the core tensor in row-major order of `core_dims`; all finite.
StrongPart ComputeStrongPart(const std::vector<double>& core, const std::vector<int64_t>& full_dims,
                             const std::vector<int64_t>& core_dims, const FingerprintOptions& options);

}  // namespace magneton::fingerprint_internal
