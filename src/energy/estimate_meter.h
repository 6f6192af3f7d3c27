#pragma once

#include <string>

#include "energy/energy.h"

namespace magneton::energy {

// What the estimate meter is driven by and its constants, for `magneton meters`.
std::string DescribeEstimate(const Meter& meter, const EstimateModel& model);

}  // namespace magneton::energy
