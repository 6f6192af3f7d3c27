// Single-pass, block-wise moments of a strided tensor (internal).
#pragma once

#include <cstdint>

#include "fingerprint/strided.h"
#include "fingerprint/fingerprint.h"
#include "fingerprint/value_parts.h"

namespace magneton::fingerprint_internal {

// Central moments merged block by block (Chan/Pebay), so a large common
// offset does not cancel catastrophically as raw power sums would.
class MomentAccumulator {
 public:
  // x holds n values; non-finite ones are counted and excluded.
  void AddBlock(const double* x, int64_t n);
  // The same for fp32 values read in place (the throughput-critical path).
  void AddBlockFloat32(const float* x, int64_t n);
  // A block whose moments were computed elsewhere (a device reduction):
  // merged exactly as a block of this accumulator's own.
  void AddMoments(const BlockMoments& block);
  // Fills the moment, min/max and NaN/Inf fields of `out` (not quantiles).
  void Finish(LayoutInvariantPart* out) const;

 private:
  void MergeFinite(int64_t nb, double mean_b, double m2b, double m3b, double m4b, double min_b, double max_b);
  void AddSlow(const double* x, int64_t n);

  int64_t total_ = 0;
  int64_t n_ = 0;  // finite values so far
  double mean_ = 0, m2_ = 0, m3_ = 0, m4_ = 0;
  double min_ = 0, max_ = 0;
  int64_t nan_ = 0, pos_inf_ = 0, neg_inf_ = 0;
};

// One pass over every element of the view, in memory order.
void AccumulateMoments(const TensorBuffer& tensor, const RunLayout& layout, MomentAccumulator* acc);

}  // namespace magneton::fingerprint_internal
