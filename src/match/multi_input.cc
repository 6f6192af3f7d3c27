// Multi-input consistency: a region pair is kept only if it matched for every
// model input (method.md section 5: equivalence must hold for all inputs).
#include <algorithm>
#include <set>
#include <utility>

#include "match/match.h"

namespace magneton {

StatusOr<MatchResult> MatchAcrossInputs(const std::vector<TracePairInput>& inputs, const MatchOptions& options) {
  if (inputs.empty()) return InvalidArgument("match: no trace pairs given");
  // A region pair by its node ordinals on both sides.
  using Key = std::pair<std::vector<int32_t>, std::vector<int32_t>>;
  auto KeyOf = [](const RegionPair& rp) { return Key{rp.nodes_a.to_vector(), rp.nodes_b.to_vector()}; };
  std::vector<MatchResult> results;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TracePairInput& in = inputs[i];
    if (!in.a || !in.b || !in.fingerprints_a || !in.fingerprints_b) {
      return InvalidArgument("match: trace pair " + std::to_string(i) + " is incomplete");
    }
    MAGNETON_ASSIGN_OR_RETURN(MatchResult r, MatchTraces(*in.a, *in.fingerprints_a, *in.b, *in.fingerprints_b, options));
    results.push_back(std::move(r));
  }
  MatchResult out;
  out.tensor_comparisons = 0;
  for (const MatchResult& r : results) out.tensor_comparisons += r.tensor_comparisons;
  std::vector<std::set<Key>> keys(results.size());
  for (size_t i = 1; i < results.size(); ++i) {
    for (const RegionPair& rp : results[i].regions) keys[i].insert(KeyOf(rp));
  }
  std::set<int64_t> kept_a, kept_b;
  for (const RegionPair& rp : results[0].regions) {
    bool everywhere = true;
    for (size_t i = 1; i < results.size() && everywhere; ++i) everywhere = keys[i].count(KeyOf(rp)) > 0;
    if (!everywhere) continue;
    kept_a.insert(rp.ops_a.begin(), rp.ops_a.end());
    kept_b.insert(rp.ops_b.begin(), rp.ops_b.end());
    out.regions.push_back(rp);
  }
  // Unmatched: every node of the first pair that no surviving region covers.
  for (const RegionPair& rp : results[0].regions) {
    for (int64_t op : rp.ops_a) {
      if (!kept_a.count(op)) out.unmatched_ops_a.push_back(op);
    }
    for (int64_t op : rp.ops_b) {
      if (!kept_b.count(op)) out.unmatched_ops_b.push_back(op);
    }
  }
  out.unmatched_ops_a.insert(out.unmatched_ops_a.end(), results[0].unmatched_ops_a.begin(),
                             results[0].unmatched_ops_a.end());
  out.unmatched_ops_b.insert(out.unmatched_ops_b.end(), results[0].unmatched_ops_b.begin(),
                             results[0].unmatched_ops_b.end());
  std::sort(out.unmatched_ops_a.begin(), out.unmatched_ops_a.end());
  std::sort(out.unmatched_ops_b.begin(), out.unmatched_ops_b.end());
  return out;
}

}  // namespace magneton
