#include "match/cut_points.h"

#include <algorithm>

namespace magneton::match_internal {
namespace {

// Prefix maximum of (total weight, candidate index) over pos_b.
class MaxFenwick {
 public:
  explicit MaxFenwick(size_t n) : tree_(n + 1, {0, -1}) {}
  void Update(size_t pos, std::pair<int64_t, int32_t> v) {
    for (size_t i = pos + 1; i < tree_.size(); i += i & (~i + 1)) tree_[i] = std::max(tree_[i], v);
  }
  std::pair<int64_t, int32_t> Query(size_t count) const {  // max over positions [0, count)
    std::pair<int64_t, int32_t> best{0, -1};
    for (size_t i = count; i > 0; i -= i & (~i + 1)) best = std::max(best, tree_[i]);
    return best;
  }

 private:
  std::vector<std::pair<int64_t, int32_t>> tree_;
};

}  // namespace

std::vector<CutCandidate> LongestMonotoneChain(std::vector<CutCandidate> c) {
  if (c.empty()) return {};
  // Sort by pos_a ascending and pos_b descending within equal pos_a: a query
  // for pos_b' < pos_b then never sees a candidate of the same pos_a, so each
  // pos_a is used at most once. Ties among equal positions: heavier first.
  std::sort(c.begin(), c.end(), [](const CutCandidate& x, const CutCandidate& y) {
    if (x.pos_a != y.pos_a) return x.pos_a < y.pos_a;
    if (x.pos_b != y.pos_b) return x.pos_b > y.pos_b;
    if (x.weight != y.weight) return x.weight > y.weight;
    return x.tensor_a < y.tensor_a;
  });
  int32_t max_b = 0;
  for (const CutCandidate& x : c) max_b = std::max(max_b, x.pos_b);
  MaxFenwick best(static_cast<size_t>(max_b) + 1);
  std::vector<int32_t> prev(c.size(), -1);
  std::pair<int64_t, int32_t> overall{0, -1};
  for (size_t i = 0; i < c.size(); ++i) {
    const auto before = best.Query(static_cast<size_t>(c[i].pos_b));
    prev[i] = before.second;
    const std::pair<int64_t, int32_t> total{before.first + std::max(c[i].weight, 1), static_cast<int32_t>(i)};
    best.Update(static_cast<size_t>(c[i].pos_b), total);
    if (total.first > overall.first) overall = total;
  }
  std::vector<CutCandidate> chain;
  for (int32_t i = overall.second; i >= 0; i = prev[i]) chain.push_back(c[i]);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

}  // namespace magneton::match_internal
