// The storage grid of a fingerprint's quantiles, chunk sums and singular
// values (internal). Each is rounded, when the fingerprint is made, to a
// multiple of a power of two tied to the scale its comparison uses (rms for
// quantiles, sqrt(chunk elements) * rms for a chunk sum, sqrt(core elements)
// * rms for a singular value), so the error is bounded in the comparison's
// own units and the codec stores a small integer per value instead of a
// float: a 64x64 value's fingerprint is a third of its float32 size.
// docs/MATCHING.md, "Precision", gives the bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fingerprint/fingerprint.h"

namespace magneton::fingerprint_internal {

// Grid steps below the statistic's scale (rounded down to a power of two):
// the rounding error is at most half a step, 2^-(bits+1) of the scale.
inline constexpr int kQuantileGridBits = 18;
inline constexpr int kChunkSumGridBits = 18;
inline constexpr int kSpectrumGridBits = 20;

// The exponent e of the step 2^e for values of this scale, or nullopt when
// the scale is zero, not finite or outside the range where the step is a
// normal double (then the values keep their float32 rounding).
std::optional<int> GridExponent(double scale, int bits);

// v as an integer number of steps 2^e, when it is exactly that and the
// integer is below 2^53 (every grid value of a finite fingerprint is).
bool GridSteps(double v, int e, int64_t* steps);
double FromGridSteps(int64_t steps, int e);

// The scales, from fields the codec decodes before the values themselves.
double QuantileScale(const InvariantMoments& part);
double ChunkSumScale(const AxisMarginal& marginal, double rms);  // uses the largest chunk
double SpectrumScale(const StrongPart& strong, double rms);

// Rounds every quantile, chunk sum and singular value to its grid (where one
// exists; where a value is too large for it, that array keeps its floats).
void RoundToGrids(Fingerprint* fp);

}  // namespace magneton::fingerprint_internal
