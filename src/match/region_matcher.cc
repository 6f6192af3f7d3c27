// Subgraph matching by dominator cut points (method.md section 5), made
// near-linear: cut candidates come from a hashed TensorIndex over one path,
// and the monotone chain is a longest-increasing-subsequence, not all pairs.
//
// One level: take the region's dominance DAG (input-dependent members, minus
// the region's verified end node), its dominator path from a virtual entry to
// the latest dead end, pair equivalent outputs of path nodes across the two
// sides, keep the longest monotone chain as cut points, split both regions
// at them and recurse into each piece. A piece with no inner cut point is a
// matched region pair, provided both of its ends are verified.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "base/both_at_once.h"
#include "match/match.h"
#include "match/components.h"
#include "match/cut_points.h"
#include "match/valueless_ops.h"

namespace magneton {
namespace {

using match_internal::Component;
using match_internal::CutCandidate;
using match_internal::IndependentComponents;
using match_internal::LongestMonotoneChain;

struct Side {
  const DataflowGraph* graph;
  const FingerprintMap* fingerprints;
  std::vector<int32_t> local;  // scratch: node -> local index in the current level, -1 outside
};

struct Level {
  std::vector<int32_t> members;  // node indices, ascending (topological)
  int32_t end_node = -1;         // member whose output is the verified exit, or -1
};

struct Dominance {
  std::vector<int32_t> path;                      // path nodes after the virtual entry, in order
  std::unordered_map<int32_t, int32_t> path_pos;  // node -> 1-based position on path
  std::vector<int32_t> segment;                   // per member: deepest strict path dominator position, or -1
  // Per member: off the path, dominated by no path node, only by the entry,
  // and made inside the level from nothing the level was given (the query a
  // loop draws with randn each iteration). Such a member is placed with its
  // consumers, not in the first region (SplitMembers). A member that reads
  // the level's inputs (a sibling projection of x, an embedding of the ids)
  // is not: it belongs to the start of the level.
  std::vector<bool> off_entry;
};

// Removes `gone` (node indices that left the level) from `members`.
void DropMembers(std::vector<int32_t>& members, std::vector<int32_t> gone) {
  if (gone.empty()) return;
  std::sort(gone.begin(), gone.end());
  std::erase_if(members, [&](int32_t v) { return std::binary_search(gone.begin(), gone.end(), v); });
}

class Matcher {
 public:
  Matcher(const DataflowGraph& a, const FingerprintMap& fa, const DataflowGraph& b, const FingerprintMap& fb,
          const MatchOptions& options)
      : a_{&a, &fa, std::vector<int32_t>(static_cast<size_t>(a.node_count()), -1)},
        b_{&b, &fb, std::vector<int32_t>(static_cast<size_t>(b.node_count()), -1)},
        options_(options) {}

  MatchResult Run() {
    Level la, lb;
    for (int32_t v = 0; v < a_.graph->op_count(); ++v) la.members.push_back(v);
    for (int32_t v = 0; v < b_.graph->op_count(); ++v) lb.members.push_back(v);
    MatchLevel(la, lb, {}, true, {}, 0);
    // What no verified region took may still hold work both sides did
    // alike: a weight's init whose first consumer lies in a part that does
    // not match (padding's model, built the same way on both sides, is read
    // first by batches that differ). Pair it as it would have been inside a
    // region; the rest stays unmatched.
    std::sort(leftover_a_.members.begin(), leftover_a_.members.end());
    std::sort(leftover_b_.members.begin(), leftover_b_.members.end());
    PeelEqualSources(leftover_a_, leftover_b_, 0, /*whole_side=*/true);
    // Ops with no value to compare (item, an uninitialised empty) go with
    // the region they touch, when the other side has their twin there.
    match_internal::AttachValuelessOps(*a_.graph, *a_.fingerprints, *b_.graph, *b_.fingerprints, &result_);
    std::vector<bool> used_a(static_cast<size_t>(a_.graph->op_count()), false);
    std::vector<bool> used_b(static_cast<size_t>(b_.graph->op_count()), false);
    for (const RegionPair& r : result_.regions) {
      for (int32_t v : r.nodes_a) used_a[v] = true;
      for (int32_t v : r.nodes_b) used_b[v] = true;
    }
    for (int32_t v = 0; v < a_.graph->op_count(); ++v) {
      if (!used_a[v]) result_.unmatched_ops_a.push_back(a_.graph->op_ids[v]);
    }
    for (int32_t v = 0; v < b_.graph->op_count(); ++v) {
      if (!used_b[v]) result_.unmatched_ops_b.push_back(b_.graph->op_ids[v]);
    }
    result_.tensor_comparisons = comparisons_;
    return std::move(result_);
  }

 private:
  // Dominator path and segments of one side's level. Only main-flow members
  // take part: weight preprocessing would hang off the entry and cut every
  // path short, and side inputs (masks, positions) read by every layer would
  // join all layers and leave no per-layer dominator (graph.h, main_flow).
  Dominance ComputeDominance(Side& side, const Level& level) {
    const DataflowGraph& g = *side.graph;
    std::vector<int32_t> dom;  // local index - 1 -> node
    for (int32_t v : level.members) {
      if (v != level.end_node && g.main_flow[v]) {
        side.local[v] = static_cast<int32_t>(dom.size()) + 1;
        dom.push_back(v);
      }
    }
    const int32_t k = static_cast<int32_t>(dom.size());
    // Each member's predecessors among the members, or the entry (0) when
    // none: compressed rows (a vector per member was 14 M heap blocks over
    // the levels of a 2.4 M-op diff).
    NodeLists<int32_t> preds;
    preds.EndNode();  // the entry has none
    std::vector<bool> has_succ(static_cast<size_t>(k) + 1, false);
    for (int32_t l = 1; l <= k; ++l) {
      bool any = false;
      for (int32_t e : g.in_edges[dom[l - 1]]) {
        const int32_t from = g.edges[e].from;
        const int32_t lf = from < g.op_count() ? side.local[from] : -1;
        if (lf >= 1) {
          preds.Push(lf);
          has_succ[lf] = true;
          any = true;
        }
      }
      if (!any) preds.Push(0);
      preds.EndNode();
    }
    std::vector<int32_t> topo(static_cast<size_t>(k) + 1);
    for (int32_t l = 0; l <= k; ++l) topo[l] = l;
    const DominatorTree tree = ComputeDominatorsDag(k + 1, topo, preds);
    // The exit: the dead end with the longest chain of computation behind
    // it, the latest among equals. Not simply the latest dead end: an engine
    // that selects output rows on the residual branch too (llama.cpp's
    // get_rows(inpL, out_ids) in its last layer) leaves a one-op pass-through
    // branch that ends after the attention branch, and taking it as the
    // exit would leave the attention off the dominator path.
    std::vector<int32_t> depth(static_cast<size_t>(k) + 1, 0);
    int32_t exit = -1;
    for (int32_t l = 1; l <= k; ++l) {
      for (int32_t p : preds[l]) depth[l] = std::max(depth[l], depth[p] + 1);
      if (!has_succ[l] && (exit < 0 || depth[l] >= depth[exit])) exit = l;
    }
    Dominance d;
    std::vector<int32_t> pos_of_local(static_cast<size_t>(k) + 1, -1);
    pos_of_local[0] = 0;
    if (exit > 0) {
      std::vector<int32_t> local_path = tree.PathFromRoot(exit);
      for (size_t i = 1; i < local_path.size(); ++i) {
        pos_of_local[local_path[i]] = static_cast<int32_t>(i);
        d.path.push_back(dom[local_path[i] - 1]);
        d.path_pos.emplace(dom[local_path[i] - 1], static_cast<int32_t>(i));
      }
    }
    std::vector<int32_t> seg_local(static_cast<size_t>(k) + 1, 0);
    for (int32_t l = 1; l <= k; ++l) {
      const int32_t id = tree.idom[l];
      if (id < 0) continue;
      seg_local[l] = pos_of_local[id] >= 0 ? pos_of_local[id] : seg_local[id];
    }
    // Members made inside the level from nothing it was given: every input
    // comes from another such member (randn, then normalize). Members are in
    // topological order, so one pass settles each after its producers.
    std::unordered_map<int32_t, bool> fresh;
    fresh.reserve(level.members.size());
    for (int32_t v : level.members) {
      bool made_here = true;
      for (int32_t e : g.in_edges[v]) {
        if (g.edges[e].tensor_id == kNoId) continue;  // the source's structural edge to a node that reads nothing
        auto it = fresh.find(g.edges[e].from);
        made_here = made_here && it != fresh.end() && it->second;
      }
      fresh.emplace(v, made_here);
    }
    d.segment.assign(level.members.size(), -1);
    d.off_entry.assign(level.members.size(), false);
    for (size_t i = 0; i < level.members.size(); ++i) {
      const int32_t l = side.local[level.members[i]];
      if (l < 1) continue;
      d.segment[i] = seg_local[l];
      d.off_entry[i] = seg_local[l] == 0 && pos_of_local[l] < 0 && fresh[level.members[i]];
    }
    for (int32_t v : dom) side.local[v] = -1;
    return d;
  }

  // Outputs of a node that carry its value onward: those read by another
  // node (or the model outputs). A layer_norm's saved mean/rstd are results
  // too, but a cut there would not separate anything; fall back to all
  // outputs when nothing is read (a dead end).
  static std::vector<int64_t> FlowOutputs(const DataflowGraph& g, int32_t v) {
    std::vector<int64_t> out;
    for (int32_t e : g.out_edges[v]) {
      const int64_t t = g.edges[e].tensor_id;
      if (t != kNoId && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
    if (out.empty()) out.assign(g.outputs[v].begin(), g.outputs[v].end());
    std::sort(out.begin(), out.end());
    return out;
  }

  // Cut weight: like ops and like (non-trivial) dims pair first among chains
  // of equal length, so layout-only runs pair op for op. Above both, a pair
  // that also agrees at a hundredth of epsilon: the same computation on both
  // sides agrees to rounding, while in a model whose layers barely change
  // the residual stream (random weights, small init) layer l and layer l+2
  // agree only to ~1e-3, and a chain of such shifted pairs once made
  // attn-eager's top region one view on A against three layers on B.
  int32_t Weight(int32_t node_a, int32_t node_b, const StoredFingerprint& fa, const StoredFingerprint& fb) {
    int32_t w = 4;
    ++comparisons_;
    if (Equivalent(fa, fb, options_.epsilon * 1e-2)) w += 4;
    if (a_.graph->op_name_hash[node_a] == b_.graph->op_name_hash[node_b]) w += 2;
    if (SameStrongDims(fa, fb)) w += 1;
    return w;
  }

  std::vector<CutCandidate> Candidates(const Dominance& da, const Dominance& db) {
    TensorIndex index(options_.epsilon);
    struct BEntry {
      int32_t pos;
      int64_t tensor;
      const StoredFingerprint* fp;
    };
    std::vector<BEntry> b_entries;
    for (size_t j = 0; j < db.path.size(); ++j) {
      for (int64_t t : FlowOutputs(*b_.graph, db.path[j])) {
        auto it = b_.fingerprints->find(t);
        if (it == b_.fingerprints->end()) continue;
        index.Add(&it->second, static_cast<int64_t>(b_entries.size()));
        b_entries.push_back({static_cast<int32_t>(j + 1), t, &it->second});
      }
    }
    // Pass 1: tensors with at most `limit` partners give every partner as a
    // candidate. A value shared by more (a loop converged to a fixed point,
    // zeros, a mask every layer reuses) would give the earliest `limit`
    // partners only, all at the start of B, and the chain would pair a long
    // stretch of A with one op of B; such tensors wait for pass 2.
    const size_t limit = static_cast<size_t>(options_.max_candidates_per_tensor);
    std::vector<CutCandidate> out;
    struct Deferred {
      int32_t pos_a;
      int64_t tensor;
      const StoredFingerprint* fp;
      int64_t near;  // where pass 1 looked, and what it found there:
      uint32_t first_hit, hit_count;  // hits_seen[first_hit, +hit_count)
      bool complete;
    };
    std::vector<Deferred> ambiguous;
    // Pass 1's hits of the deferred lookups: pass 2 at the same place would
    // walk the same entries again (in a long stationary run, every lookup,
    // each to the end of its scan budget).
    std::vector<int64_t> hits_seen;
    std::vector<int64_t> hits;
    // Weights in units of kOrderSteps + 1: below every reason Weight() has,
    // an ambiguous pair gains the closer it lies to its expected partner.
    // Without it a chain may skip B entries for free and drift a step ahead
    // of A through a run of equal values (A's step k with B's step k+1), then
    // drop A's entries to get back: regions of one op against several.
    constexpr int32_t kOrderSteps = 8;
    auto add = [&](int32_t pos_a, int64_t t, const StoredFingerprint& fp, int64_t near) {
      for (int64_t h : hits) {
        const BEntry& be = b_entries[h];
        const int32_t order = near < 0 ? kOrderSteps
                                       : kOrderSteps - static_cast<int32_t>(std::min<int64_t>(kOrderSteps, std::llabs(h - near)));
        out.push_back({pos_a, be.pos, t, be.tensor,
                       Weight(da.path[pos_a - 1], db.path[be.pos - 1], fp, *be.fp) * (kOrderSteps + 1) + order});
      }
    };
    // Each lookup starts where the partner is expected: past the last tensor
    // that had exactly one partner, by as many entries as A has moved on
    // since (scaled by the paths' lengths). Under the scan budget
    // (MatchOptions::max_scan_per_lookup) a lookup that could not see every
    // partner in a crowded cell is paired by order too.
    size_t a_total = 0;
    for (int32_t v : da.path) a_total += FlowOutputs(*a_.graph, v).size();
    const double b_per_a = a_total ? static_cast<double>(b_entries.size()) / static_cast<double>(a_total) : 1.0;
    const size_t max_scan = static_cast<size_t>(std::max(options_.max_scan_per_lookup, 1));
    int64_t anchor_a = 0, anchor_b = 0, a_seen = 0;
    for (size_t i = 0; i < da.path.size(); ++i) {
      for (int64_t t : FlowOutputs(*a_.graph, da.path[i])) {
        const int64_t a_index = a_seen++;
        auto it = a_.fingerprints->find(t);
        if (it == a_.fingerprints->end()) continue;
        const int64_t near = anchor_b + std::llround(static_cast<double>(a_index - anchor_a) * b_per_a);
        const bool complete = index.FindNear(it->second, limit + 1, near, &hits, max_scan);
        if (hits.size() > limit || !complete) {
          ambiguous.push_back({static_cast<int32_t>(i + 1), t, &it->second, near,
                               static_cast<uint32_t>(hits_seen.size()), static_cast<uint32_t>(hits.size()), complete});
          hits_seen.insert(hits_seen.end(), hits.begin(), hits.end());
          continue;
        }
        if (hits.size() == 1) anchor_a = a_index, anchor_b = hits[0];
        add(static_cast<int32_t>(i + 1), t, it->second, -1);
      }
    }
    // Pass 2: by order. The unambiguous pairs' chain anchors both paths; an
    // ambiguous tensor between two anchors takes the partners nearest to
    // where it falls between them on B, so the k-th of a run of equal
    // values pairs with the k-th (before the first and after the last
    // anchor, the paths' ends anchor).
    if (!ambiguous.empty()) {
      const std::vector<CutCandidate> anchors = LongestMonotoneChain(out);
      std::vector<int64_t> first_entry_at(db.path.size() + 2, static_cast<int64_t>(b_entries.size()));
      for (size_t e = b_entries.size(); e-- > 0;) first_entry_at[b_entries[e].pos] = static_cast<int64_t>(e);
      for (size_t p = first_entry_at.size() - 1; p-- > 0;) first_entry_at[p] = std::min(first_entry_at[p], first_entry_at[p + 1]);
      const int32_t end_a = static_cast<int32_t>(da.path.size()) + 1, end_b = static_cast<int32_t>(db.path.size()) + 1;
      for (const Deferred& d : ambiguous) {
        auto next = std::upper_bound(anchors.begin(), anchors.end(), d.pos_a,
                                     [](int32_t pos, const CutCandidate& c) { return pos < c.pos_a; });
        const int32_t a0 = next == anchors.begin() ? 0 : std::prev(next)->pos_a;
        const int32_t b0 = next == anchors.begin() ? 0 : std::prev(next)->pos_b;
        const int32_t a1 = next == anchors.end() ? end_a : next->pos_a;
        const int32_t b1 = next == anchors.end() ? end_b : next->pos_b;
        const double along = a1 > a0 ? static_cast<double>(d.pos_a - a0) / (a1 - a0) : 0;
        const int32_t expected_b = std::clamp(static_cast<int32_t>(std::lround(b0 + along * (b1 - b0))), 1, end_b);
        const int64_t near = first_entry_at[expected_b];
        if (near == d.near) {
          // The walk from the same place: the `limit` nearest of pass 1's
          // (which found limit + 1 when complete, all it could see else).
          hits.assign(hits_seen.begin() + d.first_hit, hits_seen.begin() + d.first_hit + d.hit_count);
          if (d.complete && hits.size() > limit) {
            // The one the walk reached last: the farthest, of a tie the higher.
            auto last = std::max_element(hits.begin(), hits.end(), [near](int64_t x, int64_t y) {
              const int64_t dx = std::llabs(x - near), dy = std::llabs(y - near);
              return dx != dy ? dx < dy : x < y;
            });
            hits.erase(last);
          }
        } else {
          index.FindNear(*d.fp, limit, near, &hits, max_scan);
        }
        add(d.pos_a, d.tensor, *d.fp, near);
      }
    }
    comparisons_ += index.comparisons();
    return out;
  }

  // Region of each member: for dependent members, the number of cut
  // positions at or before its segment; for the rest, the earliest region of
  // a consumer inside the level (else the last region). A member that hangs
  // off the entry (Dominance::off_entry) goes with its earliest consumer too,
  // else to the first region: segment 0 says only that nothing on the path
  // comes before it. Taken as the first region, a loop's later iterations
  // left their inputs (randn, normalize) in the first iteration's region on
  // the side where they were main flow, and that region came out 24 ops
  // against 9 and costlier for the wrong reason.
  std::vector<std::vector<int32_t>> SplitMembers(const Side& side, const Level& level, const Dominance& d,
                                                 const std::vector<int32_t>& cut_pos) {
    const DataflowGraph& g = *side.graph;
    const int32_t last = static_cast<int32_t>(cut_pos.size());
    std::unordered_map<int32_t, int32_t> region_of;
    region_of.reserve(level.members.size());
    for (size_t i = 0; i < level.members.size(); ++i) {
      if (d.segment[i] < 0 || d.off_entry[i]) continue;
      region_of[level.members[i]] = static_cast<int32_t>(
          std::upper_bound(cut_pos.begin(), cut_pos.end(), d.segment[i]) - cut_pos.begin());
    }
    for (size_t i = level.members.size(); i-- > 0;) {
      const int32_t v = level.members[i];
      if (region_of.count(v)) continue;
      int32_t r = -1;
      if (v != level.end_node) {
        for (int32_t e : g.out_edges[v]) {
          auto it = region_of.find(g.edges[e].to);
          if (it != region_of.end()) r = r < 0 ? it->second : std::min(r, it->second);
        }
      }
      region_of[v] = r >= 0 ? r : d.off_entry[i] ? 0 : last;
    }
    std::vector<std::vector<int32_t>> regions(static_cast<size_t>(last) + 1);
    for (int32_t v : level.members) regions[region_of[v]].push_back(v);
    return regions;
  }

  // An op that reads no other op's output (randn with a seed, arange), or any
  // op off the main flow (a weight's init, a timestep embedding, a mask),
  // lands in its first consumer's region. When the other side makes the same
  // value with a like-named op, that pair is a region of its own: shared
  // input and side computation says nothing about the computation compared,
  // and left in would dilute a real difference next to it. What one side
  // computes and the other does not stays in the region.
  bool IsSource(const DataflowGraph& g, int32_t v) const {
    if (!g.main_flow[v]) return true;
    for (int32_t e : g.in_edges[v]) {
      if (g.edges[e].from < g.op_count()) return false;
    }
    return true;
  }

  // The fingerprints of v's flow outputs, all of them or none (one missing,
  // or more than `max_outputs`).
  std::vector<const StoredFingerprint*> SourceOutputs(const Side& side, int32_t v, size_t max_outputs) const {
    const std::vector<int64_t> outs = FlowOutputs(*side.graph, v);
    if (outs.empty() || outs.size() > max_outputs) return {};
    std::vector<const StoredFingerprint*> fps;
    for (int64_t t : outs) {
      auto it = side.fingerprints->find(t);
      if (it == side.fingerprints->end()) return {};
      fps.push_back(&it->second);
    }
    return fps;
  }

  // whole_side: peel even when nothing would be left, and sources of
  // several results too (an `unbind` of a tensor of sentence lengths) —
  // only for what no region holds: there is no rest to compare. Inside a
  // region only single-result sources are peeled, as before.
  void PeelEqualSources(Level& la, Level& lb, int depth, bool whole_side = false) {
    const size_t max_outputs = whole_side ? 4096 : 1;
    std::vector<int32_t> sources_b;
    std::vector<std::vector<const StoredFingerprint*>> outputs_b;
    for (int32_t v : lb.members) {
      if (v == lb.end_node || !IsSource(*b_.graph, v)) continue;
      std::vector<const StoredFingerprint*> fps = SourceOutputs(b_, v, max_outputs);
      if (fps.empty()) continue;
      sources_b.push_back(v);
      outputs_b.push_back(std::move(fps));
    }
    if (sources_b.empty()) return;
    std::vector<bool> taken(sources_b.size(), false);
    std::unordered_map<uint64_t, std::vector<size_t>> by_name;  // like-named candidates, in order
    for (size_t j = 0; j < sources_b.size(); ++j) by_name[b_.graph->op_name_hash[sources_b[j]]].push_back(j);
    std::vector<int32_t> peeled_a, peeled_b;
    for (int32_t v : la.members) {
      if (v == la.end_node || !IsSource(*a_.graph, v)) continue;
      const std::vector<const StoredFingerprint*> fa = SourceOutputs(a_, v, max_outputs);
      if (fa.empty()) continue;
      auto bucket = by_name.find(a_.graph->op_name_hash[v]);
      if (bucket == by_name.end()) continue;
      for (size_t j : bucket->second) {
        if (taken[j] || outputs_b[j].size() != fa.size()) continue;
        bool equal = true;
        for (size_t k = 0; k < fa.size() && equal; ++k) {
          ++comparisons_;
          equal = Equivalent(*fa[k], *outputs_b[j][k], options_.epsilon);
        }
        if (!equal) continue;
        taken[j] = true;
        peeled_a.push_back(v);
        peeled_b.push_back(sources_b[j]);
        break;
      }
    }
    if (peeled_a.empty()) return;
    // Never peel a whole side: the rest would have nothing to compare with.
    if (!whole_side && (peeled_a.size() == la.members.size() || peeled_b.size() == lb.members.size())) return;
    for (size_t i = 0; i < peeled_a.size(); ++i) {
      const std::vector<int64_t> outs_a = FlowOutputs(*a_.graph, peeled_a[i]);
      const std::vector<int64_t> outs_b = FlowOutputs(*b_.graph, peeled_b[i]);
      RegionPair r;
      r.nodes_a = {peeled_a[i]};
      r.nodes_b = {peeled_b[i]};
      r.ops_a = {a_.graph->op_ids[peeled_a[i]]};
      r.ops_b = {b_.graph->op_ids[peeled_b[i]]};
      r.starts_at_model_inputs = true;
      for (size_t k = 0; k < outs_a.size(); ++k) r.outputs.push_back({outs_a[k], outs_b[k]});
      r.depth = depth;
      result_.regions.push_back(std::move(r));
    }
    DropMembers(la.members, std::move(peeled_a));
    DropMembers(lb.members, std::move(peeled_b));
  }

  void Emit(Level la, Level lb, const std::vector<TensorPair>& entry, bool from_inputs,
            const std::vector<TensorPair>& exit, int depth) {
    if (la.members.empty() && lb.members.empty()) return;
    PeelEqualSources(la, lb, depth);
    RegionPair r;
    r.nodes_a = la.members;
    r.nodes_b = lb.members;
    r.ops_a.reserve(la.members.size());
    r.ops_b.reserve(lb.members.size());
    for (int32_t v : la.members) r.ops_a.push_back(a_.graph->op_ids[v]);
    for (int32_t v : lb.members) r.ops_b.push_back(b_.graph->op_ids[v]);
    r.starts_at_model_inputs = from_inputs;
    r.inputs = entry;
    r.outputs = exit;
    r.depth = depth;
    result_.regions.push_back(std::move(r));
  }

  // Independent pieces (IndependentComponents) are paired in order by an
  // equivalent output of their exits and matched on their own; what pairs
  // leaves the level. Unpaired pieces stay, as before.
  void MatchIndependentPieces(Level& la, Level& lb, const std::vector<TensorPair>& entry, bool from_inputs,
                              int depth) {
    std::vector<Component> pa = IndependentComponents(*a_.graph, la.members, la.end_node, a_.local);
    if (pa.empty()) return;
    std::vector<Component> pb = IndependentComponents(*b_.graph, lb.members, lb.end_node, b_.local);
    if (pb.empty()) return;
    TensorIndex index(options_.epsilon);
    std::vector<std::pair<size_t, int64_t>> b_outputs;  // (piece, tensor)
    for (size_t j = 0; j < pb.size(); ++j) {
      for (int64_t t : FlowOutputs(*b_.graph, pb[j].sink)) {
        auto it = b_.fingerprints->find(t);
        if (it == b_.fingerprints->end()) continue;
        index.Add(&it->second, static_cast<int64_t>(b_outputs.size()));
        b_outputs.emplace_back(j, t);
      }
    }
    std::vector<bool> taken(pb.size(), false);
    std::vector<int32_t> gone_a, gone_b;
    std::vector<int64_t> hits;
    // Identical pieces are all equivalent to each other: look far enough to
    // find the first one not yet taken.
    const size_t limit = std::min<size_t>(b_outputs.size(), 4096);
    for (const Component& ca : pa) {
      TensorPair out{kNoId, kNoId};
      size_t partner = pb.size();
      for (int64_t t : FlowOutputs(*a_.graph, ca.sink)) {
        auto it = a_.fingerprints->find(t);
        if (it == a_.fingerprints->end()) continue;
        index.Find(it->second, limit, &hits);
        for (int64_t h : hits) {
          const auto& [j, tb] = b_outputs[static_cast<size_t>(h)];
          if (taken[j]) continue;
          partner = j;
          out = {t, tb};
          break;
        }
        if (partner < pb.size()) break;
      }
      if (partner == pb.size()) continue;
      taken[partner] = true;
      const Component& cb = pb[partner];
      gone_a.insert(gone_a.end(), ca.members.begin(), ca.members.end());
      gone_b.insert(gone_b.end(), cb.members.begin(), cb.members.end());
      MatchLevel(Level{ca.members, ca.sink}, Level{cb.members, cb.sink}, entry, from_inputs, {out}, depth + 1);
    }
    comparisons_ += index.comparisons();
    DropMembers(la.members, std::move(gone_a));
    DropMembers(lb.members, std::move(gone_b));
  }

  void MatchLevel(Level la, Level lb, const std::vector<TensorPair>& entry, bool from_inputs,
                  const std::vector<TensorPair>& exit, int depth) {
    const bool verified_exit = !exit.empty();
    if (depth >= options_.max_depth || la.members.empty() || lb.members.empty()) {
      if (verified_exit) {
        Emit(la, lb, entry, from_inputs, exit, depth);
      } else {
        KeepLeftovers(la, lb);
      }
      return;
    }
    MatchIndependentPieces(la, lb, entry, from_inputs, depth);
    const Dominance da = ComputeDominance(a_, la);
    const Dominance db = ComputeDominance(b_, lb);
    std::vector<CutCandidate> chain = LongestMonotoneChain(Candidates(da, db));
    if (chain.empty()) {
      if (verified_exit) {
        Emit(la, lb, entry, from_inputs, exit, depth);
      } else {
        KeepLeftovers(la, lb);
      }
      return;
    }
    std::vector<int32_t> cut_a, cut_b;
    for (const CutCandidate& c : chain) {
      cut_a.push_back(c.pos_a);
      cut_b.push_back(c.pos_b);
    }
    // SplitMembers counts cut positions <= a member's segment: a cut node's
    // own segment is the position before it, so it closes the region before
    // the cut, and side nodes hanging off it open the next one.
    std::vector<std::vector<int32_t>> ra = SplitMembers(a_, la, da, cut_a);
    std::vector<std::vector<int32_t>> rb = SplitMembers(b_, lb, db, cut_b);
    for (size_t r = 0; r <= chain.size(); ++r) {
      Level sa{std::move(ra[r]), r < chain.size() ? da.path[chain[r].pos_a - 1] : la.end_node};
      Level sb{std::move(rb[r]), r < chain.size() ? db.path[chain[r].pos_b - 1] : lb.end_node};
      std::vector<TensorPair> sub_entry =
          r == 0 ? entry : std::vector<TensorPair>{{chain[r - 1].tensor_a, chain[r - 1].tensor_b}};
      std::vector<TensorPair> sub_exit =
          r < chain.size() ? std::vector<TensorPair>{{chain[r].tensor_a, chain[r].tensor_b}} : exit;
      MatchLevel(std::move(sa), std::move(sb), sub_entry, r == 0 && from_inputs, sub_exit, depth + 1);
    }
  }

  // Members of a level no verified region will hold, for the last peel.
  void KeepLeftovers(const Level& la, const Level& lb) {
    leftover_a_.members.insert(leftover_a_.members.end(), la.members.begin(), la.members.end());
    leftover_b_.members.insert(leftover_b_.members.end(), lb.members.begin(), lb.members.end());
  }

  Side a_, b_;
  MatchOptions options_;
  MatchResult result_;
  Level leftover_a_, leftover_b_;
  int64_t comparisons_ = 0;
};

}  // namespace

StatusOr<MatchResult> MatchGraphs(const DataflowGraph& a, const FingerprintMap& fa, const DataflowGraph& b,
                                  const FingerprintMap& fb, const MatchOptions& options) {
  if (!(options.epsilon >= 0)) return InvalidArgument("match: epsilon must be a non-negative number");
  return Matcher(a, fa, b, fb, options).Run();
}

StatusOr<MatchResult> MatchTraces(const Trace& a, const FingerprintMap& fa, const Trace& b, const FingerprintMap& fb,
                                  const MatchOptions& options) {
  // Each side's graph on its own core.
  MAGNETON_ASSIGN_OR_RETURN(auto graphs, BothOkAtOnce([&] { return BuildDataflowGraph(a, options.graph); },
                                                      [&] { return BuildDataflowGraph(b, options.graph); }));
  return MatchGraphs(graphs.first, fa, graphs.second, fb, options);
}

}  // namespace magneton
