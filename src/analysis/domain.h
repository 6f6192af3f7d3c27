// The one energy domain a comparison uses.
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// `requested` when both traces have it; else (requested empty) the domain
// both have with the most energy in A. One domain, not a sum: domains can
// overlap (core inside package, psys over everything), so the largest common
// one stands for the run. GPU domains with device activity on both sides are
// added to it ("cpu-package-0+gpu-0": device energy for GPU work, host energy
// for host work) when their provenance is the same, else chosen alone.
StatusOr<std::string> ChooseDomain(const Trace& a, const Trace& b, const std::string& requested);

}  // namespace magneton::analysis
