// Choosing cut points: the longest chain of equivalent tensor pairs that is
// monotone along both dominator paths (internal to the match stage).
#pragma once

#include <cstdint>
#include <vector>

namespace magneton::match_internal {

struct CutCandidate {
  int32_t pos_a = 0;  // position on A's dominator path
  int32_t pos_b = 0;
  int64_t tensor_a = -1;
  int64_t tensor_b = -1;
};

// Longest strictly increasing chain in both positions: O(k log k).
std::vector<CutCandidate> LongestMonotoneChain(std::vector<CutCandidate> candidates);

}  // namespace magneton::match_internal
