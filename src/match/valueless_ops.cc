#include "match/valueless_ops.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace magneton::match_internal {
namespace {

// How a left-over op touches a region: it feeds one of the region's ops
// (an `empty` whose buffer an init fills) or reads one's result (an `item`
// of a value the region made); failing both, it runs just before the
// region's op that comes next in program order (a `lift_fresh` of a Python
// constant hands back a tensor no op made, so it has no edge at all).
enum Direction : int { kFeeds = 0, kReads = 1, kPrecedes = 2 };
using Key = std::tuple<int32_t, int, uint64_t>;  // region, direction, op name hash

constexpr int kMaxRounds = 4;  // chains like detach -> empty -> init settle in two

// Per node: whether none of its results has a fingerprint. Fixed for the
// whole pass, so it is worked out once, not in every round.
std::vector<bool> ValuelessNodes(const DataflowGraph& g, const FingerprintMap& fps) {
  std::vector<bool> out(static_cast<size_t>(g.op_count()), true);
  for (int32_t v = 0; v < g.op_count(); ++v) {
    for (int64_t t : g.outputs[v]) {
      if (fps.count(t)) {
        out[v] = false;
        break;
      }
    }
  }
  return out;
}

// The region a left-over valueless op belongs next to: that of the first op
// it feeds, else of the first op it reads from, else of the next op in
// program order that a region holds (`next_in_region`); false for none.
bool KeyOf(const DataflowGraph& g, const std::vector<int32_t>& region_of, const std::vector<int32_t>& next_in_region,
           int32_t v, Key* key) {
  for (int32_t e : g.out_edges[v]) {
    const int32_t to = g.edges[e].to;
    if (to < g.op_count() && region_of[to] >= 0) {
      *key = {region_of[to], kFeeds, g.op_name_hash[v]};
      return true;
    }
  }
  for (int32_t e : g.in_edges[v]) {
    const int32_t from = g.edges[e].from;
    if (from < g.op_count() && region_of[from] >= 0) {
      *key = {region_of[from], kReads, g.op_name_hash[v]};
      return true;
    }
  }
  if (next_in_region[v] >= 0) {
    *key = {region_of[next_in_region[v]], kPrecedes, g.op_name_hash[v]};
    return true;
  }
  return false;
}

// For each node, the next node after it in program order that a region
// holds, or -1.
std::vector<int32_t> NextInRegion(const std::vector<int32_t>& region_of) {
  std::vector<int32_t> next(region_of.size(), -1);
  int32_t seen = -1;
  for (size_t v = region_of.size(); v-- > 0;) {
    next[v] = seen;
    if (region_of[v] >= 0) seen = static_cast<int32_t>(v);
  }
  return next;
}

std::vector<int32_t> RegionOf(const DataflowGraph& g, const RegionPairs& regions, bool side_a) {
  std::vector<int32_t> out(static_cast<size_t>(g.op_count()), -1);
  for (size_t r = 0; r < regions.size(); ++r) {
    for (int32_t v : side_a ? regions[r].nodes_a : regions[r].nodes_b) out[v] = static_cast<int32_t>(r);
  }
  return out;
}

}  // namespace

void AttachValuelessOps(const DataflowGraph& a, const FingerprintMap& fa, const DataflowGraph& b,
                        const FingerprintMap& fb, MatchResult* result) {
  std::vector<int32_t> region_a = RegionOf(a, result->regions, true);
  std::vector<int32_t> region_b = RegionOf(b, result->regions, false);
  const std::vector<bool> valueless_a = ValuelessNodes(a, fa), valueless_b = ValuelessNodes(b, fb);
  for (int round = 0; round < kMaxRounds; ++round) {
    const std::vector<int32_t> next_a = NextInRegion(region_a), next_b = NextInRegion(region_b);
    std::map<Key, std::deque<int32_t>> b_by_key;  // B's candidates, ascending
    for (int32_t u = 0; u < b.op_count(); ++u) {
      Key key;
      if (region_b[u] < 0 && valueless_b[u] && KeyOf(b, region_b, next_b, u, &key)) b_by_key[key].push_back(u);
    }
    if (b_by_key.empty()) return;
    std::vector<std::tuple<int32_t, int32_t, int32_t>> pairs;  // (region, a node, b node)
    for (int32_t v = 0; v < a.op_count(); ++v) {
      Key key;
      if (region_a[v] >= 0 || !valueless_a[v] || !KeyOf(a, region_a, next_a, v, &key)) continue;
      auto it = b_by_key.find(key);
      if (it == b_by_key.end() || it->second.empty()) continue;
      pairs.emplace_back(std::get<0>(key), v, it->second.front());
      it->second.pop_front();
    }
    if (pairs.empty()) return;
    // Assigned after the sweep, so one round's keys all see the same regions.
    // Appended, then each region touched is sorted once: inserting in place
    // would cost a region's size per op (a long run's one large region with
    // an item per step).
    std::vector<int32_t> touched;
    for (const auto& [r, v, u] : pairs) {
      RegionPair& region = result->regions[static_cast<size_t>(r)];
      region.nodes_a.push_back(v);
      region.ops_a.push_back(a.op_ids[v]);
      region.nodes_b.push_back(u);
      region.ops_b.push_back(b.op_ids[u]);
      region_a[v] = r;
      region_b[u] = r;
      touched.push_back(r);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int32_t r : touched) {
      RegionPair& region = result->regions[static_cast<size_t>(r)];
      // Node order is op-id order, so the two lists sort alike.
      std::sort(region.nodes_a.begin(), region.nodes_a.end());
      std::sort(region.ops_a.begin(), region.ops_a.end());
      std::sort(region.nodes_b.begin(), region.nodes_b.end());
      std::sort(region.ops_b.begin(), region.ops_b.end());
    }
  }
}

}  // namespace magneton::match_internal
