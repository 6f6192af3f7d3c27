// Choosing cut points: the heaviest chain of equivalent tensor pairs that is
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
  // Why weights: a run of layout-only ops (view, transpose, reshape) yields
  // many equivalent tensors, so chains of equal length abound; the weight
  // prefers pairs of like ops and like shapes, which pairs them op for op.
  int32_t weight = 1;
};

// The chain strictly increasing in both positions with the largest total
// weight (with unit weights: the longest). O(k log k) with a Fenwick tree.
std::vector<CutCandidate> LongestMonotoneChain(std::vector<CutCandidate> candidates);

}  // namespace magneton::match_internal
