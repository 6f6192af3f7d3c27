#include "match/components.h"

#include <algorithm>
#include <numeric>

namespace magneton::match_internal {
namespace {

int32_t Find(std::vector<int32_t>& up, int32_t x) {
  while (up[x] != x) {
    up[x] = up[up[x]];
    x = up[x];
  }
  return x;
}

}  // namespace

std::vector<Component> IndependentComponents(const DataflowGraph& g, const std::vector<int32_t>& members,
                                             int32_t end_node, std::vector<int32_t>& scratch) {
  const int32_t n = static_cast<int32_t>(members.size());
  // scratch[node] = position in `members`, for membership and local indices.
  for (int32_t i = 0; i < n; ++i) scratch[members[i]] = i;
  auto local = [&](int32_t node) { return node >= 0 && node < g.op_count() ? scratch[node] : -1; };
  auto main = [&](int32_t i) { return static_cast<bool>(g.main_flow[members[i]]); };

  std::vector<int32_t> up(static_cast<size_t>(n));
  std::iota(up.begin(), up.end(), 0);
  std::vector<int32_t> depth(static_cast<size_t>(n), 0);
  std::vector<bool> feeds_main(static_cast<size_t>(n), false);
  for (int32_t i = 0; i < n; ++i) {  // members ascend, so producers come first
    if (!main(i)) continue;
    for (int32_t e : g.in_edges[members[i]]) {
      const int32_t from = local(g.edges[e].from);
      if (from < 0 || !main(from)) continue;
      up[Find(up, i)] = Find(up, from);
      depth[i] = std::max(depth[i], depth[from] + 1);
      feeds_main[from] = true;
    }
  }
  // The exit's piece stays with the level: it is what the dominator path runs through.
  int32_t exit = end_node >= 0 ? local(end_node) : -1;
  if (exit < 0 || !main(exit)) {
    exit = -1;
    for (int32_t i = 0; i < n; ++i) {
      if (main(i) && !feeds_main[i] && (exit < 0 || depth[i] >= depth[exit])) exit = i;
    }
  }
  std::vector<Component> out;
  if (exit < 0) {
    for (int32_t v : members) scratch[v] = -1;
    return out;
  }
  const int32_t exit_root = Find(up, exit);
  // Piece index per member: main members by their root; others by their consumers.
  std::vector<int32_t> piece(static_cast<size_t>(n), -1);
  std::vector<int32_t> piece_of_root(static_cast<size_t>(n), -1);
  for (int32_t i = 0; i < n; ++i) {
    if (!main(i)) continue;
    const int32_t root = Find(up, i);
    if (root == exit_root) continue;
    if (piece_of_root[root] < 0) {
      piece_of_root[root] = static_cast<int32_t>(out.size());
      out.emplace_back();
    }
    piece[i] = piece_of_root[root];
  }
  if (out.empty()) {
    for (int32_t v : members) scratch[v] = -1;
    return out;
  }
  for (int32_t i = n; i-- > 0;) {  // consumers before producers
    if (main(i) || members[i] == end_node) continue;
    int32_t common = -1;
    bool any = false, one = true;
    for (int32_t e : g.out_edges[members[i]]) {
      const int32_t to = local(g.edges[e].to);
      if (to < 0) continue;
      if (!any) common = piece[to];
      any = true;
      one = one && piece[to] == common && common >= 0;
    }
    if (any && one) piece[i] = common;
  }
  for (int32_t i = 0; i < n; ++i) {
    if (piece[i] < 0) continue;
    Component& c = out[static_cast<size_t>(piece[i])];
    c.members.push_back(members[i]);
    if (main(i) && !feeds_main[i] && (c.sink < 0 || depth[i] >= depth[scratch[c.sink]])) c.sink = members[i];
  }
  for (int32_t v : members) scratch[v] = -1;
  return out;
}

}  // namespace magneton::match_internal
