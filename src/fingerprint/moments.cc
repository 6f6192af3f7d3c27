#include "fingerprint/moments.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace magneton::fingerprint_internal {
namespace {

// Small enough that a converted block stays in L1 for the second sweep.
constexpr int64_t kBlockElements = 2048;

typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

struct BlockSums {
  double sum, lo, hi, m2, m3, m4;
};

// The contiguous fp32 hot loop, 4 lanes wide via GCC vector extensions and
// cloned for AVX2 with a runtime dispatch (SSE2 elsewhere). Two sweeps over a
// block that stays in L1; fp64 accumulation throughout.
// Under ThreadSanitizer the clones' ifunc resolver is instrumented and runs
// during relocation, before the TSan runtime exists, and crashes the program
// at load; a TSan build uses the portable loop only.
#if defined(__SANITIZE_THREAD__)
#define MAGNETON_AVX2_CLONES
#else
#define MAGNETON_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#endif
MAGNETON_AVX2_CLONES BlockSums SumsFloat32(const float* x, int64_t n) {
  v4d s0 = {0, 0, 0, 0}, s1 = s0;
  v4f lo, hi;
  for (int k = 0; k < 4; ++k) lo[k] = hi[k] = x[0];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v4f a, b;
    __builtin_memcpy(&a, x + i, sizeof a);
    __builtin_memcpy(&b, x + i + 4, sizeof b);
    s0 += __builtin_convertvector(a, v4d);
    s1 += __builtin_convertvector(b, v4d);
    lo = a < lo ? a : lo;
    hi = a > hi ? a : hi;
    lo = b < lo ? b : lo;
    hi = b > hi ? b : hi;
  }
  const v4d s = s0 + s1;
  BlockSums out{s[0] + s[1] + s[2] + s[3], lo[0], hi[0], 0, 0, 0};
  for (int k = 1; k < 4; ++k) {
    out.lo = std::min<double>(out.lo, lo[k]);
    out.hi = std::max<double>(out.hi, hi[k]);
  }
  for (int64_t j = i; j < n; ++j) {
    out.sum += x[j];
    out.lo = std::min<double>(out.lo, x[j]);
    out.hi = std::max<double>(out.hi, x[j]);
  }
  if (!std::isfinite(out.sum)) return out;
  const double mean = out.sum / static_cast<double>(n);
  const v4d m = {mean, mean, mean, mean};
  // Two independent accumulator sets hide the add latency.
  v4d a2 = {0, 0, 0, 0}, a3 = a2, a4 = a2, b2 = a2, b3 = a2, b4 = a2;
  for (i = 0; i + 8 <= n; i += 8) {
    v4f a, b;
    __builtin_memcpy(&a, x + i, sizeof a);
    __builtin_memcpy(&b, x + i + 4, sizeof b);
    const v4d d = __builtin_convertvector(a, v4d) - m;
    const v4d e = __builtin_convertvector(b, v4d) - m;
    const v4d d2 = d * d, e2 = e * e;
    a2 += d2;
    a3 += d2 * d;
    a4 += d2 * d2;
    b2 += e2;
    b3 += e2 * e;
    b4 += e2 * e2;
  }
  a2 += b2;
  a3 += b3;
  a4 += b4;
  out.m2 = a2[0] + a2[1] + a2[2] + a2[3];
  out.m3 = a3[0] + a3[1] + a3[2] + a3[3];
  out.m4 = a4[0] + a4[1] + a4[2] + a4[3];
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    out.m2 += d * d;
    out.m3 += d * d * d;
    out.m4 += d * d * d * d;
  }
  return out;
}

}  // namespace

void MomentAccumulator::AddBlockFloat32(const float* x, int64_t n) {
  if (n <= 0) return;
  const BlockSums b = SumsFloat32(x, n);
  if (!std::isfinite(b.sum)) {
    double tmp[kBlockElements];
    for (int64_t i = 0; i < n; ++i) tmp[i] = x[i];
    AddSlow(tmp, n);
    return;
  }
  total_ += n;
  MergeFinite(n, b.sum / static_cast<double>(n), b.m2, b.m3, b.m4, b.lo, b.hi);
}

void MomentAccumulator::AddMoments(const BlockMoments& block) {
  total_ += block.count;
  nan_ += block.nan_count;
  pos_inf_ += block.pos_inf_count;
  neg_inf_ += block.neg_inf_count;
  const int64_t finite = block.count - block.nan_count - block.pos_inf_count - block.neg_inf_count;
  if (finite > 0) MergeFinite(finite, block.mean, block.m2, block.m3, block.m4, block.min, block.max);
}

void MomentAccumulator::MergeFinite(int64_t nb, double mean_b, double m2b, double m3b, double m4b,
                                    double min_b, double max_b) {
  if (nb == 0) return;
  if (n_ == 0) {
    n_ = nb, mean_ = mean_b, m2_ = m2b, m3_ = m3b, m4_ = m4b, min_ = min_b, max_ = max_b;
    return;
  }
  const double na = static_cast<double>(n_), nbd = static_cast<double>(nb);
  const double n = na + nbd;
  const double delta = mean_b - mean_;
  const double d_n = delta / n;
  const double d_n2 = d_n * d_n;
  const double term1 = delta * d_n * na * nbd;  // delta^2 * na * nb / n
  const double m4 = m4_ + m4b + term1 * d_n2 * (na * na - na * nbd + nbd * nbd) +
                    6.0 * d_n2 * (na * na * m2b + nbd * nbd * m2_) + 4.0 * d_n * (na * m3b - nbd * m3_);
  const double m3 = m3_ + m3b + term1 * d_n * (na - nbd) + 3.0 * d_n * (na * m2b - nbd * m2_);
  m2_ = m2_ + m2b + term1;
  m3_ = m3;
  m4_ = m4;
  mean_ += d_n * nbd;
  n_ += nb;
  min_ = std::min(min_, min_b);
  max_ = std::max(max_, max_b);
}

void MomentAccumulator::AddBlock(const double* x, int64_t n) {
  if (n <= 0) return;
  total_ += n;
  // Sweep 1: sum, min, max with four independent chains for ILP.
  double s[4] = {0, 0, 0, 0};
  double lo[4], hi[4];
  for (int k = 0; k < 4; ++k) lo[k] = hi[k] = x[0];
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      s[k] += x[i + k];
      lo[k] = x[i + k] < lo[k] ? x[i + k] : lo[k];
      hi[k] = x[i + k] > hi[k] ? x[i + k] : hi[k];
    }
  }
  for (; i < n; ++i) {
    s[0] += x[i];
    lo[0] = std::min(lo[0], x[i]);
    hi[0] = std::max(hi[0], x[i]);
  }
  const double sum = (s[0] + s[1]) + (s[2] + s[3]);
  // NaN or Inf anywhere makes the sum non-finite (or a finite overflow does;
  // the slow path copes with both).
  if (!std::isfinite(sum)) {
    total_ -= n;
    AddSlow(x, n);
    return;
  }
  const double mean = sum / static_cast<double>(n);
  // Sweep 2 (from L1): central power sums.
  double a2[4] = {0, 0, 0, 0}, a3[4] = {0, 0, 0, 0}, a4[4] = {0, 0, 0, 0};
  i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      const double d = x[i + k] - mean;
      const double d2 = d * d;
      a2[k] += d2;
      a3[k] += d2 * d;
      a4[k] += d2 * d2;
    }
  }
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    const double d2 = d * d;
    a2[0] += d2;
    a3[0] += d2 * d;
    a4[0] += d2 * d2;
  }
  const double lo_all = std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3]));
  const double hi_all = std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]));
  MergeFinite(n, mean, (a2[0] + a2[1]) + (a2[2] + a2[3]), (a3[0] + a3[1]) + (a3[2] + a3[3]),
              (a4[0] + a4[1]) + (a4[2] + a4[3]), lo_all, hi_all);
}

void MomentAccumulator::AddSlow(const double* x, int64_t n) {
  total_ += n;
  double finite[kBlockElements];
  int64_t kept = 0;
  auto flush = [&] {
    if (kept == 0) return;
    double sum = 0, lo = finite[0], hi = finite[0];
    for (int64_t j = 0; j < kept; ++j) {
      sum += finite[j];
      lo = std::min(lo, finite[j]);
      hi = std::max(hi, finite[j]);
    }
    const double mean = sum / static_cast<double>(kept);
    double m2 = 0, m3 = 0, m4 = 0;
    for (int64_t j = 0; j < kept; ++j) {
      const double d = finite[j] - mean;
      m2 += d * d;
      m3 += d * d * d;
      m4 += d * d * d * d;
    }
    MergeFinite(kept, mean, m2, m3, m4, lo, hi);
    kept = 0;
  };
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    if (std::isnan(v)) {
      ++nan_;
    } else if (std::isinf(v)) {
      (v > 0 ? pos_inf_ : neg_inf_)++;
    } else {
      finite[kept++] = v;
      if (kept == kBlockElements) flush();
    }
  }
  flush();
}

void MomentAccumulator::Finish(LayoutInvariantPart* out) const {
  out->element_count = total_;
  out->nan_count = nan_;
  out->pos_inf_count = pos_inf_;
  out->neg_inf_count = neg_inf_;
  if (n_ == 0) {
    out->mean = out->variance = out->skewness = out->kurtosis = out->min = out->max = 0;
    return;
  }
  const double n = static_cast<double>(n_);
  out->mean = mean_;
  out->variance = std::max(m2_ / n, 0.0);
  out->min = min_;
  out->max = max_;
  // Standardised moments are meaningless when the spread is rounding noise.
  const double var = out->variance;
  if (var > 0 && var > 1e-24 * mean_ * mean_) {
    out->skewness = (m3_ / n) / (var * std::sqrt(var));
    out->kurtosis = (m4_ / n) / (var * var);
  } else {
    out->skewness = 0;
    out->kurtosis = 0;
  }
}

void AccumulateMoments(const TensorBuffer& tensor, const RunLayout& layout, MomentAccumulator* acc) {
  alignas(64) double block[kBlockElements];
  if (tensor.dtype == DType::kFloat32) {
    // Unit-stride fp32 runs skip the conversion buffer entirely.
    bool unit = layout.strides.back() == 1;
    if (unit) {
      const float* base = static_cast<const float*>(tensor.data);
      ForEachRun(layout, [&](int64_t offset, int64_t count, int64_t) {
        for (int64_t done = 0; done < count; done += kBlockElements) {
          acc->AddBlockFloat32(base + offset + done, std::min(kBlockElements, count - done));
        }
      });
      return;
    }
  }
  int64_t fill = 0;  // short runs (transposed views) share one block
  ForEachRun(layout, [&](int64_t offset, int64_t count, int64_t stride) {
    for (int64_t done = 0; done < count;) {
      const int64_t n = std::min(kBlockElements - fill, count - done);
      LoadElements(tensor.dtype, tensor.data, offset + done * stride, n, stride, block + fill);
      fill += n;
      done += n;
      if (fill == kBlockElements) {
        acc->AddBlock(block, fill);
        fill = 0;
      }
    }
  });
  if (fill > 0) acc->AddBlock(block, fill);
}

}  // namespace magneton::fingerprint_internal
