// Semantic matching of two runs (method.md section 5): which tensors hold the
// same values, and which regions of the two dataflow graphs compute the same
// thing between such tensors. Fingerprints are supplied by the caller.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/small_vector.h"
#include "fingerprint/fingerprint_map.h"
#include "graph/graph.h"
#include "magneton/analysis_defaults.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

struct MatchOptions {
  double epsilon = defaults::kEpsilon;  // the one tolerance, passed to Equivalent()
  GraphOptions graph;
  // A tensor equivalent to very many others (zeros, constants) is a poor cut
  // point; beyond this many candidates the rest are ignored.
  int max_candidates_per_tensor = 16;
  // How many index entries one cut-candidate lookup may compare, nearest to
  // where its partner is expected first. A long run of a stationary process
  // (a training loop, a recurrence in a limit cycle) puts thousands of
  // tensors with like statistics in one index cell, few of them equivalent:
  // an unbounded lookup made matching quadratic (two 120k-op traces: 1e9
  // comparisons). A lookup that runs out is paired by order (pass 2 of the
  // candidates); below this many entries per cell nothing changes.
  int max_scan_per_lookup = 1024;
  // Recursion guard. Each level splits off at least one cut; diffusers' Flux
  // model (13k ops) needed 145 levels, and 64 left a 2.7k-op region behind.
  int max_depth = 1024;
};

// Tiered candidate lookup: an exact key on (element count, dtype class,
// NaN/Inf counts) plus tolerant cells over four statistics that Equivalent()
// bounds (log rms, mean/rms, skewness, kurtosis; the last two are full-pass
// statistics, exact even when quantiles are sampled, keyed per band of
// rms/std because their tolerance scales with it).
// A query probes only the cells its tolerance interval overlaps (1-2 per
// statistic), then runs the full Equivalent() check. Never all-pairs.
class TensorIndex {
 public:
  explicit TensorIndex(double epsilon);
  // `fp` must outlive the index; `payload` is returned by Find.
  void Add(const StoredFingerprint* fp, int64_t payload);
  // Payloads of equivalent entries, in insertion order, at most `limit`.
  void Find(const StoredFingerprint& fp, size_t limit, std::vector<int64_t>* out) const;
  // The `limit` equivalent entries whose payloads are nearest to `near`, in
  // ascending order. For a value many tensors share (a converged iteration,
  // zeros, a mask every layer reuses), where the earliest `limit` of Find
  // would all lie at one end of the run. Payloads must have been added in
  // ascending order. At most `max_scan` entries are compared, nearest first;
  // returns false when that budget ran out before `limit` were found and
  // entries were left (the result is then the equivalents among the nearest
  // `max_scan`), true when the answer is complete.
  bool FindNear(const StoredFingerprint& fp, size_t limit, int64_t near, std::vector<int64_t>* out,
                size_t max_scan = SIZE_MAX) const;
  int64_t comparisons() const { return comparisons_; }

  static constexpr int kDims = 4;                 // tolerant statistics
  using Cell = std::array<int64_t, kDims + 1>;   // spread band, then one cell per statistic

 private:
  struct Entry {
    const StoredFingerprint* fp;
    int64_t payload;
    MomentSummary moments;  // read instead of *fp by the pre-filter
    bool has_finite = false;
  };
  // Equivalent(), after a pre-filter on the entry's own moments.
  bool Matches(const StoredFingerprint& fp, const MomentSummary& moments, const Entry& e) const;
  uint64_t BucketKey(const StoredFingerprint& fp, const Cell& cell) const;
  std::vector<Cell> Probes(const StoredFingerprint& fp) const;  // cells a partner of fp can be in

  double epsilon_;
  std::unordered_map<uint64_t, std::vector<Entry>> buckets_;
  mutable int64_t comparisons_ = 0;
};

struct TensorPair {
  int64_t a = kNoId;
  int64_t b = kNoId;
  bool operator==(const TensorPair&) const = default;
};

// Every tensor of `a` with up to `max_per_tensor` equivalent tensors of `b`.
std::vector<TensorPair> FindEquivalentTensors(const FingerprintMap& a, const FingerprintMap& b, double epsilon,
                                              size_t max_per_tensor = 4);

// A pair of regions that compute the same thing: they start from equivalent
// tensors (or both from the model inputs) and end in equivalent tensors.
// Most region pairs are one node a side with one output (small_vector.h).
using RegionOps = SmallVector<int64_t, 1>;
using RegionNodes = SmallVector<int32_t, 2>;
using RegionCut = SmallVector<TensorPair, 1>;

struct RegionPair {
  RegionOps ops_a;  // node op ids (top-level or leaf ops), in order
  RegionOps ops_b;
  RegionNodes nodes_a;  // graph node indices (ordinals), in order
  RegionNodes nodes_b;
  bool starts_at_model_inputs = false;
  RegionCut inputs;   // the entry cut (empty at the model inputs)
  RegionCut outputs;  // the exit cut
  int depth = 0;                    // recursion level that produced it
};

// Region pairs in blocks, not one array: a long run's 80 000 pairs grew an
// array by doubling, old and new both held at the moment of the matcher's
// peak (docs/PERFORMANCE.md, "At scale"). Indexed as a vector is.
using RegionPairs = std::deque<RegionPair>;

struct MatchResult {
  RegionPairs regions;
  std::vector<int64_t> unmatched_ops_a;  // nodes in no matched region
  std::vector<int64_t> unmatched_ops_b;
  int64_t tensor_comparisons = 0;  // Equivalent() calls, for complexity checks
};

StatusOr<MatchResult> MatchGraphs(const DataflowGraph& a, const FingerprintMap& fa, const DataflowGraph& b,
                                  const FingerprintMap& fb, const MatchOptions& options = {});
StatusOr<MatchResult> MatchTraces(const Trace& a, const FingerprintMap& fa, const Trace& b, const FingerprintMap& fb,
                                  const MatchOptions& options = {});

// One run of each system on the same model input.
struct TracePairInput {
  const Trace* a = nullptr;
  const FingerprintMap* fingerprints_a = nullptr;
  const Trace* b = nullptr;
  const FingerprintMap* fingerprints_b = nullptr;
};

// Matches every pair and keeps a region pair (from the first pair) only if
// the same region pair, by node ordinals, matched for every input. Assumes
// each system runs the same op sequence for every input (fixed shapes).
StatusOr<MatchResult> MatchAcrossInputs(const std::vector<TracePairInput>& inputs, const MatchOptions& options = {});

}  // namespace magneton
