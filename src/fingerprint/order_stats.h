// Exact order statistics of finite doubles (internal): the quantile step of
// every fingerprint, up to 8k grid values for each value `record --values`
// sees. std::nth_element over the 64 ranks the quantiles read cost ~28 us
// for 3 072 values on the project's VM, two thirds of such a fingerprint
// (bench/fingerprint --small).
#pragma once

#include <cstdint>
#include <vector>

namespace magneton::fingerprint_internal {

// The values of rank ranks[k] (0-based, ascending, distinct, < values.size())
// in ascending order of `values` (finite: no NaN, no Inf). Reorders `values`.
// Exact: the same values std::sort would put at those ranks (a zero's sign
// aside: -0.0 and +0.0 tie).
std::vector<double> SelectOrderStatistics(std::vector<double>* values, const std::vector<int64_t>& ranks);

}  // namespace magneton::fingerprint_internal
