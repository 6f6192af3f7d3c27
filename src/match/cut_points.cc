#include "match/cut_points.h"

#include <algorithm>

namespace magneton::match_internal {

std::vector<CutCandidate> LongestMonotoneChain(std::vector<CutCandidate> c) {
  // Sort by pos_a ascending and pos_b descending within equal pos_a, so a
  // strictly increasing subsequence in pos_b uses each pos_a at most once.
  std::sort(c.begin(), c.end(), [](const CutCandidate& x, const CutCandidate& y) {
    if (x.pos_a != y.pos_a) return x.pos_a < y.pos_a;
    if (x.pos_b != y.pos_b) return x.pos_b > y.pos_b;
    return x.tensor_a < y.tensor_a;
  });
  std::vector<int32_t> tail_value;  // smallest pos_b ending a chain of length i+1
  std::vector<int32_t> tail_index;
  std::vector<int32_t> prev(c.size(), -1);
  for (size_t i = 0; i < c.size(); ++i) {
    auto it = std::lower_bound(tail_value.begin(), tail_value.end(), c[i].pos_b);
    const size_t len = static_cast<size_t>(it - tail_value.begin());
    prev[i] = len > 0 ? tail_index[len - 1] : -1;
    if (it == tail_value.end()) {
      tail_value.push_back(c[i].pos_b);
      tail_index.push_back(static_cast<int32_t>(i));
    } else {
      *it = c[i].pos_b;
      tail_index[len] = static_cast<int32_t>(i);
    }
  }
  std::vector<CutCandidate> chain;
  for (int32_t i = tail_index.empty() ? -1 : tail_index.back(); i >= 0; i = prev[i]) chain.push_back(c[i]);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

}  // namespace magneton::match_internal
