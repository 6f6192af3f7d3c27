// Waste vs trade-off vs equal (method.md section 6).
#include "detect/detect.h"

namespace magneton::detect {

Verdict Classify(const SideCost& a, const SideCost& b, bool outputs_agree, const Options& options) {
  const bool a_cheaper = a.energy_uj <= b.energy_uj;
  const SideCost& cheap = a_cheaper ? a : b;
  const SideCost& costly = a_cheaper ? b : a;
  // Strictly more than tau: a difference of exactly tau is still "equal".
  if (costly.energy_uj <= cheap.energy_uj * (1.0 + options.tau)) return Verdict::kEqual;
  // A cheaper side that is slower, or computes something else, is a choice
  // (speed or accuracy for energy), not waste.
  const double allowed_ns = static_cast<double>(costly.time_ns) * (1.0 + options.max_slowdown);
  if (static_cast<double>(cheap.time_ns) > allowed_ns) return Verdict::kTradeOff;
  if (!outputs_agree) return Verdict::kTradeOff;
  return Verdict::kWaste;
}

}  // namespace magneton::detect
