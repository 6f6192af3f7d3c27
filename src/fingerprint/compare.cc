// CompareFingerprints: one tolerance, epsilon, applied relative to the tensor's
// value scale (rms). Rounding fp32 to bf16 perturbs each value by at most
// 2^-9 of itself (fp16: 2^-12), so every check below allows ~epsilon of the
// relevant scale; genuinely different data moves the statistics by O(1) of it.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "fingerprint/fingerprint.h"
#include "fingerprint/fingerprint_map.h"
#include "fingerprint/strong_codec.h"

namespace magneton {
namespace {

// A failed check says why only when asked: the matcher calls Equivalent()
// tens of millions of times on large runs, and formatting a reason for every
// rejected candidate cost more than the comparison itself.
template <typename Why>
bool Differ(std::string* why, Why&& reason) {
  if (why) *why = reason();
  return false;
}

bool Close(double a, double b, double tolerance) { return std::fabs(a - b) <= tolerance; }

// Standard error of a sample quantile (0 when exact): sqrt(p(1-p)/n) * dq/dp,
// with the density slope taken from the neighbouring quantiles.
template <typename Quantiles>
double QuantileStdError(const InvariantMoments& part, const Quantiles& q, int i) {
  if (part.quantile_sample_size <= 0) return 0.0;
  const double dp = 1.0 / kFingerprintQuantiles;
  const double p = (i + 0.5) * dp;
  double slope;
  if (i == 0) {
    slope = 2.0 * (q[1] - q[0]) / dp;  // tails thin out faster than the neighbour shows
  } else if (i == kFingerprintQuantiles - 1) {
    slope = 2.0 * (q[i] - q[i - 1]) / dp;
  } else {
    slope = std::max(q[i] - q[i - 1], q[i + 1] - q[i]) / dp;
  }
  return std::sqrt(p * (1 - p) / static_cast<double>(part.quantile_sample_size)) * slope;
}

// The same (dim, sampled dim) pairs up to order: the strong parts compare.
// On the stack (ranks are small): the matcher asks tens of millions of times.
bool SameDimPairs(const StrongPart& a, const StrongPart& b) {
  constexpr size_t kOnStack = 8;
  const size_t n = a.dims.size();
  if (n != b.dims.size() || a.core_dims.size() != n || b.core_dims.size() != n) return false;
  if (n > kOnStack) {
    auto pairs = [](const StrongPart& s) {
      std::vector<std::pair<int64_t, int64_t>> out;
      for (size_t k = 0; k < s.dims.size(); ++k) out.emplace_back(s.dims[k], s.core_dims[k]);
      std::sort(out.begin(), out.end());
      return out;
    };
    return pairs(a) == pairs(b);
  }
  std::array<std::pair<int64_t, int64_t>, kOnStack> pa, pb;
  for (size_t k = 0; k < n; ++k) {
    pa[k] = {a.dims[k], a.core_dims[k]};
    pb[k] = {b.dims[k], b.core_dims[k]};
  }
  std::sort(pa.begin(), pa.begin() + static_cast<ptrdiff_t>(n));
  std::sort(pb.begin(), pb.begin() + static_cast<ptrdiff_t>(n));
  return std::equal(pa.begin(), pa.begin() + static_cast<ptrdiff_t>(n), pb.begin());
}

// A marginal folded into `chunks` chunks, when each of their boundaries is
// one of its own: a trace written before the chunk count fell from 64 to 16
// (mfp2) still compares with one written after (the fold of 64 chunks of an
// axis into 16 has exactly the 16-chunk boundaries, c * n / 16).
std::optional<AxisMarginal> Folded(const AxisMarginal& m, size_t chunks) {
  const size_t have = m.chunk_sums.size();
  if (chunks == 0 || chunks >= have || m.chunk_elements.size() != have) return std::nullopt;
  const int64_t n = m.axis_size;
  AxisMarginal out;
  out.axis_size = n;
  size_t j = 0;
  for (size_t c = 0; c < chunks; ++c) {
    const int64_t hi = static_cast<int64_t>(c + 1) * n / static_cast<int64_t>(chunks);
    double sum = 0;
    int64_t elements = 0;
    // Old chunk j spans [j * n / have, (j + 1) * n / have).
    while (j < have && static_cast<int64_t>(j + 1) * n / static_cast<int64_t>(have) <= hi) {
      sum += m.chunk_sums[j];
      elements += m.chunk_elements[j];
      ++j;
    }
    if (static_cast<int64_t>(j) * n / static_cast<int64_t>(have) != hi) return std::nullopt;  // boundary not shared
    out.chunk_sums.push_back(sum);
    out.chunk_elements.push_back(elements);
  }
  return out;
}

// RMS over chunks of the chunk sums' differences, each in units of
// sqrt(chunk elements) * scale; nullopt when the chunks are not the same.
std::optional<double> MarginalDistance(const AxisMarginal& ma, const AxisMarginal& mb, double scale) {
  if (ma.axis_size != mb.axis_size) return std::nullopt;
  if (ma.chunk_sums.size() != mb.chunk_sums.size()) {
    // Written with other chunk counts: compare at the coarser one.
    const bool a_finer = ma.chunk_sums.size() > mb.chunk_sums.size();
    const std::optional<AxisMarginal> folded = Folded(a_finer ? ma : mb, (a_finer ? mb : ma).chunk_sums.size());
    if (!folded) return std::nullopt;
    return a_finer ? MarginalDistance(*folded, mb, scale) : MarginalDistance(ma, *folded, scale);
  }
  if (ma.chunk_elements != mb.chunk_elements) return std::nullopt;
  double sq = 0;
  size_t k = 0;
  for (const ChunkCounts::Run& run : ma.chunk_elements.runs()) {
    const double per_chunk = static_cast<double>(std::max<int64_t>(run.value, 1)) * scale * scale;
    for (int64_t r = 0; r < run.length && k < ma.chunk_sums.size(); ++r, ++k) {
      const double d = ma.chunk_sums[k] - mb.chunk_sums[k];
      sq += d * d / per_chunk;
    }
  }
  return std::sqrt(sq / static_cast<double>(std::max<size_t>(ma.chunk_sums.size(), 1)));
}

// Axis marginals as a multiset over axes: each axis of `a` must pair with a
// distinct axis of `b` whose chunk sums agree. Chunk sums of c values differ
// by ~sqrt(c)*scale between unrelated data, so distances are in those units.
bool CompareMarginals(const StrongPart& a, const StrongPart& b, double scale, double epsilon, std::string* why) {
  std::vector<bool> used(b.marginals.size(), false);
  for (size_t i = 0; i < a.marginals.size(); ++i) {
    const AxisMarginal& ma = a.marginals[i];
    bool found = false;
    double best = INFINITY;
    for (size_t j = 0; j < b.marginals.size() && !found; ++j) {
      if (used[j]) continue;
      const std::optional<double> dist = MarginalDistance(ma, b.marginals[j], scale);
      if (!dist) continue;
      best = std::min(best, *dist);
      if (*dist <= epsilon) {
        used[j] = true;
        found = true;
      }
    }
    if (!found) {
      return Differ(why, [&] {
        return fmt::format("axis marginals differ (axis of size {}: best distance {:.3g} > {:.3g})", ma.axis_size,
                           best, epsilon);
      });
    }
  }
  return true;
}

// Singular values move by at most the Frobenius norm of the perturbation
// (Weyl), i.e. ~epsilon * sqrt(n) * scale for rounding noise.
bool CompareSpectra(const StrongPart& a, const StrongPart& b, double scale, double epsilon, std::string* why) {
  if (a.spectra.size() != b.spectra.size()) return true;  // computed under other limits
  int64_t n = 1;
  for (int64_t d : a.core_dims) n *= d;
  const double tolerance = epsilon * std::sqrt(static_cast<double>(n)) * scale;
  std::vector<bool> used(b.spectra.size(), false);
  for (const UnfoldingSpectrum& sa : a.spectra) {
    bool found = false;
    for (size_t j = 0; j < b.spectra.size() && !found; ++j) {
      const UnfoldingSpectrum& sb = b.spectra[j];
      if (used[j] || sa.rows != sb.rows || sa.cols != sb.cols ||
          sa.singular_values.size() != sb.singular_values.size()) {
        continue;
      }
      double sq = 0;
      for (size_t k = 0; k < sa.singular_values.size(); ++k) {
        const double d = sa.singular_values[k] - sb.singular_values[k];
        sq += d * d;
      }
      if (std::sqrt(sq) <= tolerance) {
        used[j] = true;
        found = true;
      }
    }
    if (!found) {
      return Differ(why, [&] { return fmt::format("unfolding spectra differ ({}x{} unfolding)", sa.rows, sa.cols); });
    }
  }
  return true;
}

// The checks, cheapest and most discriminating first; `why` (may be null)
// receives the reason of the first one that fails. qa[i], qb[i] are the
// quantiles (an array, or a stored fingerprint's steps). strong_parts() gives
// both strong parts (StrongPair), asked for only when both have one and
// everything before agreed: a stored fingerprint decodes its own then.
struct StrongPair {
  const StrongPart* a = nullptr;  // null: not readable
  const StrongPart* b = nullptr;
};
template <typename Quantiles, typename StrongParts>
bool CompareParts(DTypeClass class_a, const InvariantMoments& a, const Quantiles& qa, DTypeClass class_b,
                  const InvariantMoments& b, const Quantiles& qb, bool both_strong, StrongParts&& strong_parts,
                  double epsilon, std::string* why) {
  if (class_a != class_b) return Differ(why, [] { return std::string("dtype classes differ"); });
  if (a.element_count != b.element_count) {
    return Differ(why, [&] {
      return fmt::format("element counts differ ({} vs {})", a.element_count, b.element_count);
    });
  }
  if (a.nan_count != b.nan_count) {
    return Differ(why, [&] { return fmt::format("NaN counts differ ({} vs {})", a.nan_count, b.nan_count); });
  }
  if (a.pos_inf_count != b.pos_inf_count || a.neg_inf_count != b.neg_inf_count) {
    return Differ(why, [&] { return std::string("Inf counts differ"); });
  }
  if (a.finite_count() == 0) return true;

  const double scale = std::max(a.rms(), b.rms());
  if (scale == 0) return true;  // both all zeros
  const MomentSummary ma = SummarizeMoments(a), mb = SummarizeMoments(b);
  switch (CheckMoments(ma, mb, epsilon)) {
    case MomentCheck::kAgree:
      break;
    case MomentCheck::kMean:
      return Differ(why, [&] { return fmt::format("means differ ({:.6g} vs {:.6g})", a.mean, b.mean); });
    case MomentCheck::kStdDev:
      return Differ(why, [&] {
        return fmt::format("standard deviations differ ({:.6g} vs {:.6g})", ma.std_dev, mb.std_dev);
      });
    case MomentCheck::kSkewness:
      return Differ(why, [&] { return fmt::format("skewness differs ({:.4g} vs {:.4g})", a.skewness, b.skewness); });
    case MomentCheck::kKurtosis:
      return Differ(why, [&] { return fmt::format("kurtosis differs ({:.4g} vs {:.4g})", a.kurtosis, b.kurtosis); });
  }
  switch (CheckExtremes(ma, mb, epsilon)) {
    case ExtremeCheck::kAgree:
      break;
    case ExtremeCheck::kMin:
      return Differ(why, [&] { return fmt::format("minima differ ({:.6g} vs {:.6g})", a.min, b.min); });
    case ExtremeCheck::kMax:
      return Differ(why, [&] { return fmt::format("maxima differ ({:.6g} vs {:.6g})", a.max, b.max); });
  }
  auto value_tol = [&](double v) { return epsilon * std::max(scale, std::fabs(v)); };
  for (int i = 0; i < kFingerprintQuantiles; ++i) {
    const double slack = 4.0 * (QuantileStdError(a, qa, i) + QuantileStdError(b, qb, i));
    const double x = qa[i], y = qb[i];
    if (!Close(x, y, value_tol(x) + slack)) {
      return Differ(why, [&] { return fmt::format("quantile {} differs ({:.6g} vs {:.6g})", i, x, y); });
    }
  }
  // The strong part is comparable only for the same (sampled) dims up to
  // permutation; after a reshape only the layout-invariant part speaks.
  if (!both_strong) return true;
  const StrongPair strong = strong_parts();
  if (!strong.a || !strong.b) return Differ(why, [] { return std::string("a strong part is unreadable"); });
  if (SameDimPairs(*strong.a, *strong.b)) {
    if (!CompareMarginals(*strong.a, *strong.b, scale, epsilon, why)) return false;
    if (!CompareSpectra(*strong.a, *strong.b, scale, epsilon, why)) return false;
  }
  return true;
}

bool Compare(const Fingerprint& fa, const Fingerprint& fb, double epsilon, std::string* why) {
  return CompareParts(fa.dtype_class, fa.invariant, fa.invariant.quantiles, fb.dtype_class, fb.invariant,
                      fb.invariant.quantiles, fa.strong.present && fb.strong.present,
                      [&] { return StrongPair{&fa.strong, &fb.strong}; }, epsilon, why);
}

// The strong parts a thread decoded last, by their encoded bytes: a lookup
// compares one value with many candidates, so one side is mostly the one
// decoded before (a byte compare instead of a decode). Decoding reuses the
// slots' vectors: nothing is allocated once they have grown.
class DecodedStrongParts {
 public:
  // Valid until the next call on this thread but one (two slots: both sides
  // of a comparison stay valid together).
  const StrongPart* Get(const StoredFingerprint& fp) {
    const std::string_view bytes = fp.strong_bytes();
    const double rms = fp.invariant.rms();
    for (Slot& s : slots_) {
      if (s.ok && s.rms == rms && s.bytes == bytes) {
        last_ = &s;
        return &s.part;
      }
    }
    Slot& s = last_ == &slots_[0] ? slots_[1] : slots_[0];
    s.bytes.assign(bytes);
    s.rms = rms;
    s.ok = DecodeStrongPart(bytes, rms, &s.part);
    last_ = &s;
    return s.ok ? &s.part : nullptr;
  }

 private:
  struct Slot {
    std::string bytes;
    double rms = 0;
    bool ok = false;
    StrongPart part;
  };
  Slot slots_[2];
  const Slot* last_ = nullptr;
};

bool Compare(const StoredFingerprint& fa, const StoredFingerprint& fb, double epsilon, std::string* why) {
  auto decode = [&] {
    thread_local DecodedStrongParts decoded;
    StrongPair pair;
    pair.a = decoded.Get(fa);
    pair.b = decoded.Get(fb);
    // fb's decode may have taken fa's slot only if fa's was the older one,
    // which Get(fa) just made the newer: both stay valid.
    return pair;
  };
  return CompareParts(fa.dtype_class, fa.invariant, fa.quantiles, fb.dtype_class, fb.invariant, fb.quantiles,
                      fa.has_strong && fb.has_strong, decode, epsilon, why);
}

}  // namespace

MomentSummary SummarizeMoments(const InvariantMoments& part) {
  return {part.mean, std::sqrt(part.variance), part.rms(), part.skewness, part.kurtosis, part.min, part.max};
}

ExtremeCheck CheckExtremes(const MomentSummary& a, const MomentSummary& b, double epsilon) {
  const double scale = std::max(a.rms, b.rms);
  auto value_tol = [&](double v) { return epsilon * std::max(scale, std::fabs(v)); };
  if (!Close(a.min, b.min, value_tol(a.min))) return ExtremeCheck::kMin;
  if (!Close(a.max, b.max, value_tol(a.max))) return ExtremeCheck::kMax;
  return ExtremeCheck::kAgree;
}

MomentCheck CheckMoments(const MomentSummary& a, const MomentSummary& b, double epsilon) {
  const double scale = std::max(a.rms, b.rms);
  const double tol = epsilon * scale;
  if (!Close(a.mean, b.mean, tol)) return MomentCheck::kMean;
  if (!Close(a.std_dev, b.std_dev, tol)) return MomentCheck::kStdDev;
  // Standardised moments amplify rounding by scale/spread; skip them when the
  // spread is itself at the rounding level.
  const double spread = std::max(a.std_dev, b.std_dev);
  if (spread > epsilon * scale) {
    const double amp = scale / spread;
    if (!Close(a.skewness, b.skewness, 3 * epsilon * amp * (1 + std::fabs(a.skewness)))) return MomentCheck::kSkewness;
    if (!Close(a.kurtosis, b.kurtosis, 4 * epsilon * amp * (1 + std::fabs(a.kurtosis)))) return MomentCheck::kKurtosis;
  }
  return MomentCheck::kAgree;
}

namespace {

template <typename F>
EquivalenceVerdict VerdictOf(const F& a, const F& b, double epsilon) {
  EquivalenceVerdict verdict;
  verdict.equivalent = Compare(a, b, epsilon, &verdict.reason);
  return verdict;
}

}  // namespace

EquivalenceVerdict CompareFingerprints(const Fingerprint& a, const Fingerprint& b, double epsilon) {
  return VerdictOf(a, b, epsilon);
}
EquivalenceVerdict CompareFingerprints(const StoredFingerprint& a, const StoredFingerprint& b, double epsilon) {
  return VerdictOf(a, b, epsilon);
}

bool Equivalent(const Fingerprint& a, const Fingerprint& b, double epsilon) { return Compare(a, b, epsilon, nullptr); }
bool Equivalent(const StoredFingerprint& a, const StoredFingerprint& b, double epsilon) {
  return Compare(a, b, epsilon, nullptr);
}

}  // namespace magneton
