// What differs between the two sides for one region's ops, as evidence for
// the verdict (detect::Options::region_differences, docs/DIFF.md
// "Uncertainty"): the diagnosis's contrasts, asked before any finding is
// diagnosed. Detection does not link diagnosis; the analysis joins them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/trace.h"

namespace magneton::analysis {

// One line per difference: a runtime state the region's ops ran under
// ("runtime state torch.backends.mkldnn.enabled: true -> false"), other
// nested work under the same op on the same inputs ("kernel: aten::conv2d
// runs other nested ops"), another layout or device of the same op's input.
// Empty when nothing recorded differs.
std::vector<std::string> RegionDifferences(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                                           const std::vector<int64_t>& ops_b, char costly_side);

}  // namespace magneton::analysis
