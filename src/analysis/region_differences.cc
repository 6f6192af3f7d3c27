#include "analysis/region_differences.h"

#include <fmt/format.h>

#include "diagnose/diagnose.h"

namespace magneton::analysis {

std::vector<std::string> RegionDifferences(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                                           const std::vector<int64_t>& ops_b, char costly_side) {
  std::vector<std::string> out;
  for (const diagnose::StateDifference& d : diagnose::DiffRuntimeStates(a, ops_a, b, ops_b, costly_side)) {
    out.push_back(fmt::format("runtime state {}: {} -> {}", d.key, d.value_a, d.value_b));
  }
  if (const diagnose::KernelContrast k = diagnose::ContrastKernels(a, ops_a, b, ops_b, costly_side); k.found) {
    out.push_back(fmt::format("kernel: {} runs other nested work on the same inputs", k.op));
  }
  if (const diagnose::LayoutContrast l = diagnose::ContrastLayouts(a, ops_a, b, ops_b, costly_side); l.found) {
    out.push_back(fmt::format("{} of {}'s input: {} -> {}", l.attribute, l.op, l.value_a, l.value_b));
  }
  return out;
}

}  // namespace magneton::analysis
