#include "fingerprint/value_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace magneton::fingerprint_internal {
namespace {

constexpr double kMaxSteps = 9007199254740992.0;  // 2^53: integers beyond are not all doubles

// Rounded to the nearest float32 when that is a normal float (or zero): the
// values without a grid. Out of float range, or below its normal range, the
// double stays: rounding would turn it into an infinity or lose its digits.
double NearestFloat(double v) {
  if (!std::isfinite(v)) return v;
  const double magnitude = std::fabs(v);
  if (magnitude > std::numeric_limits<float>::max()) return v;
  if (magnitude != 0 && magnitude < std::numeric_limits<float>::min()) return v;
  return static_cast<double>(static_cast<float>(v));
}

// Rounds values[] onto the grid of `scale`, or each to its nearest float when
// there is no grid or one value does not fit it.
template <typename Range>
void RoundArray(Range& values, double scale, int bits) {
  const std::optional<int> e = GridExponent(scale, bits);
  bool fits = e.has_value();
  for (double v : values) {
    if (!fits) break;
    fits = std::isfinite(v) && std::fabs(std::ldexp(v, -*e)) < kMaxSteps / 2;
  }
  // + 0.0: a -0.0 step count is stored as 0, so it is +0.0 here too.
  for (double& v : values) v = fits ? std::ldexp(std::nearbyint(std::ldexp(v, -*e)), *e) + 0.0 : NearestFloat(v);
}

}  // namespace

std::optional<int> GridExponent(double scale, int bits) {
  if (!std::isfinite(scale) || scale <= 0) return std::nullopt;
  int exponent = 0;
  std::frexp(scale, &exponent);  // scale = m * 2^exponent, m in [0.5, 1)
  const int e = exponent - 1 - bits;
  // Steps of a normal double, and values up to 2^53 steps that stay finite.
  if (e < std::numeric_limits<double>::min_exponent || e + 53 > std::numeric_limits<double>::max_exponent - 1) {
    return std::nullopt;
  }
  return e;
}

bool GridSteps(double v, int e, int64_t* steps) {
  if (!std::isfinite(v) || (v == 0 && std::signbit(v))) return false;  // -0.0 would come back as +0.0
  const double scaled = std::ldexp(v, -e);
  if (std::fabs(scaled) >= kMaxSteps || scaled != std::nearbyint(scaled)) return false;
  *steps = static_cast<int64_t>(scaled);
  // Scaling down may have lost bits (a subnormal v under a large step
  // underflows to 0 steps): only a value that comes back is on the grid.
  return FromGridSteps(*steps, e) == v;
}

double FromGridSteps(int64_t steps, int e) { return std::ldexp(static_cast<double>(steps), e); }

double QuantileScale(const InvariantMoments& part) { return part.rms(); }

double ChunkSumScale(const AxisMarginal& marginal, double rms) {
  int64_t largest = 1;
  for (const ChunkCounts::Run& run : marginal.chunk_elements.runs()) largest = std::max(largest, run.value);
  return std::sqrt(static_cast<double>(largest)) * rms;
}

double SpectrumScale(const StrongPart& strong, double rms) {
  double n = 1;
  for (int64_t d : strong.core_dims) n *= static_cast<double>(d);
  return std::sqrt(n) * rms;
}

void RoundToGrids(Fingerprint* fp) {
  LayoutInvariantPart& p = fp->invariant;
  // The four moments stay fp64 (32 bytes): they are what a reader of the
  // fingerprint takes as its summary, and a 1e6 offset must not eat a
  // mean's fraction there. The extremes keep float32 rounding: their
  // tolerance is of their own order.
  for (double* v : {&p.min, &p.max}) *v = NearestFloat(*v);
  const double rms = p.rms();
  RoundArray(p.quantiles, QuantileScale(p), kQuantileGridBits);
  for (AxisMarginal& m : fp->strong.marginals) RoundArray(m.chunk_sums, ChunkSumScale(m, rms), kChunkSumGridBits);
  const double spectrum_scale = SpectrumScale(fp->strong, rms);
  for (UnfoldingSpectrum& u : fp->strong.spectra) RoundArray(u.singular_values, spectrum_scale, kSpectrumGridBits);
}

}  // namespace magneton::fingerprint_internal
