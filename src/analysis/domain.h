// The one energy domain a comparison uses.
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// `requested` when both traces have it; else (requested empty) the domain
// both have with the most energy in A. One domain, not a sum: domains can
// overlap (core inside package, psys over everything), so the largest common
// one stands for the run.
StatusOr<std::string> ChooseDomain(const Trace& a, const Trace& b, const std::string& requested);

}  // namespace magneton::analysis
