// Per-tensor value fingerprints: a compact signature of a tensor's values that
// lets two runs decide "same tensor, possibly in another layout or precision"
// without storing the values. Two parts:
//   * layout-invariant: statistics of the multiset of values (count, moments,
//     min/max, NaN/Inf counts, 32 quantiles). Survives permute, transpose,
//     reshape, contiguous copies and any other rearrangement of elements.
//   * strong (small tensors only): axis-marginal sums and singular values of
//     the two-way unfoldings. Survives permute/transpose/contiguous (compared as
//     a multiset over axes), not reshape; tells a tensor from a shuffled copy.
// See docs/MATCHING.md for the exact tolerances.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "magneton/status.h"

namespace magneton {

enum class DType : uint8_t {
  kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool,
};

// Values of different classes never match (an index tensor is not a float).
enum class DTypeClass : uint8_t { kFloating = 0, kIntegral = 1, kBool = 2 };

// Accepts trace spellings: "float32", "torch.float32", "float", "half", "bf16", ...
StatusOr<DType> ParseDType(std::string_view name);
DTypeClass ClassOf(DType dtype);
size_t ElementSizeBytes(DType dtype);

// A borrowed strided view. `data` is the address of element [0, ..., 0];
// strides are in elements and may be zero (broadcast) or negative.
struct TensorBuffer {
  const void* data = nullptr;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: contiguous row-major
};

inline constexpr int kFingerprintQuantiles = 32;

// The counts and moments of a layout-invariant part: all of it but the
// quantiles (a stored fingerprint keeps those apart, fingerprint_map.h).
struct InvariantMoments {
  int64_t element_count = 0;
  int64_t nan_count = 0;
  int64_t pos_inf_count = 0;
  int64_t neg_inf_count = 0;
  // Moments over finite values, accumulated in fp64.
  double mean = 0;
  double variance = 0;  // population variance
  double skewness = 0;  // third standardised moment (0 when variance is 0)
  double kurtosis = 0;  // fourth standardised moment (not excess)
  double min = 0;
  double max = 0;
  // 0 when the quantiles are exact; else how many finite values the sample held
  // (the comparison widens its tolerance by the sampling error).
  int64_t quantile_sample_size = 0;

  int64_t finite_count() const { return element_count - nan_count - pos_inf_count - neg_inf_count; }
  double rms() const;  // sqrt(mean^2 + variance): the tensor's value scale
};

struct LayoutInvariantPart : InvariantMoments {
  // Quantile i is at probability (i + 0.5) / kFingerprintQuantiles over finite values.
  std::array<double, kFingerprintQuantiles> quantiles{};
};

// How many elements each chunk of an axis marginal sums, run-length coded.
// An axis folds into chunks of n/chunks rounded down or up, so the counts are
// one run for the power-of-two sizes ML tensors mostly have: a few bytes
// where 64 int64 counts per axis took half of a decoded fingerprint's memory
// (a diff of two 1.8 M-op traces holds 600 000 fingerprints per side). The
// runs are canonical (neighbours differ), so equal counts compare equal.
class ChunkCounts {
 public:
  struct Run {
    int64_t value = 0;
    int64_t length = 0;  // >= 1
    bool operator==(const Run&) const = default;
  };
  ChunkCounts() = default;
  ChunkCounts(std::initializer_list<int64_t> values);
  void push_back(int64_t value);  // NOLINT: reads like the vector it replaced
  void clear();
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t k) const;  // O(runs)
  int64_t back() const { return runs_.back().value; }
  const std::vector<Run>& runs() const { return runs_; }
  std::vector<int64_t> Expanded() const;
  bool operator==(const ChunkCounts&) const = default;

 private:
  std::vector<Run> runs_;
  size_t size_ = 0;
};

// One axis (of size > 1) of a small tensor: sums over all other axes, in index
// order, folded into at most kMaxMarginalValues contiguous chunks.
struct AxisMarginal {
  int64_t axis_size = 0;
  std::vector<double> chunk_sums;
  ChunkCounts chunk_elements;  // elements summed into each chunk
};

// The singular values (largest first, at most kMaxSingularValues) of the
// matrix that puts one subset of axes in rows and the rest in columns.
struct UnfoldingSpectrum {
  int64_t rows = 0;  // min(prod of row axes, prod of column axes)
  int64_t cols = 0;  // the larger side
  std::vector<double> singular_values;
};

// Computed on the "core": the whole tensor when small, else the sample grid
// (the same per-axis positions the quantiles use), so large tensors get a
// permutation-invariant order-sensitive check too.
struct StrongPart {
  bool present = false;
  std::vector<int64_t> dims;       // non-trivial dims (size > 1), in the tensor's order
  std::vector<int64_t> core_dims;  // sampled size of each; equal to dims when exact
  std::vector<AxisMarginal> marginals;     // one per entry of dims
  std::vector<UnfoldingSpectrum> spectra;  // one per bipartition of dims (may be empty)
};

struct Fingerprint {
  DTypeClass dtype_class = DTypeClass::kFloating;
  LayoutInvariantPart invariant;
  StrongPart strong;
};

struct FingerprintOptions {
  // Quantiles (and the strong part) are exact up to this many elements, else
  // computed on a deterministic sample grid of about max(4096, n/256) elements (at most 65536)
  // whose per-axis positions depend only on the axis size and the shape
  // multiset (so a permuted view samples the very same elements).
  int64_t exact_max_elements = 1 << 16;
  int strong_max_rank = 5;
  // Unfolding spectra only where the smaller side is at most this (Gram
  // eigenvalues cost rows^2 * cols).
  int64_t spectrum_max_rows = 32;
  int64_t spectrum_max_elements = 1 << 14;
  // Off: only the layout-invariant part (the cheapest fingerprint).
  bool compute_strong = true;
};

// What `record --values` computes for every tensor, inline on the traced
// thread: exact quantiles only up to 8k elements (the default 64k sorts cost
// milliseconds per activation); larger ones use the sample grid, whose error
// the comparison already allows for. fingerprint_bench --small times it.
inline FingerprintOptions ValueFingerprintOptions() {
  FingerprintOptions options;
  options.exact_max_elements = 1 << 13;
  return options;
}

inline constexpr int kMaxMarginalValues = 16;
inline constexpr int kMaxSingularValues = 8;

StatusOr<Fingerprint> ComputeFingerprint(const TensorBuffer& tensor, const FingerprintOptions& options = {});
// The fingerprint of a tensor whose layout-invariant part is known: that of
// the very same elements read through another layout (a transpose or permute
// of a value fingerprinted a moment before: the same (size, stride) pairs of
// its dims of size > 1 in another order, at the same offset, no two of them
// with the same |stride|). Then ComputeFingerprint would sum the moments in
// the same memory order and its sample grid permutes with the dims, so
// `invariant` is its invariant part bit for bit; only the strong part, which
// reads the tensor's own order, is computed (from the sample grid, not a
// pass over every value). The caller vouches for the elements.
StatusOr<Fingerprint> ComputeFingerprintWithInvariant(const TensorBuffer& tensor, const LayoutInvariantPart& invariant,
                                                      const FingerprintOptions& options = {});

// Why two fingerprints differ, for tests and `magneton match -v`.
struct EquivalenceVerdict {
  bool equivalent = false;
  std::string reason;  // empty when equivalent
};

// The moments CompareFingerprints checks first, packed small: an index keeps
// one beside each entry and rejects most candidates without reading the
// fingerprint itself (scattered in memory: a cache miss per candidate).
struct MomentSummary {
  double mean = 0;
  double std_dev = 0;
  double rms = 0;
  double skewness = 0;
  double kurtosis = 0;
  double min = 0;  // the extremes, which CompareFingerprints checks next
  double max = 0;
};
MomentSummary SummarizeMoments(const InvariantMoments& part);

enum class MomentCheck : uint8_t { kAgree, kMean, kStdDev, kSkewness, kKurtosis };
// The first moment check of CompareFingerprints that fails (kAgree: none).
// The very code CompareFingerprints runs, so a pre-filter on it rejects only
// what the full comparison rejects. Both tensors must hold finite values and
// not both be all zeros (CompareFingerprints decides those before).
MomentCheck CheckMoments(const MomentSummary& a, const MomentSummary& b, double epsilon);
// The check CompareFingerprints runs after the moments agree: minima, then
// maxima, within epsilon of the larger of the value scale and the value (of
// `a`, the tensor looked up). kAgree, kMin or kMax.
enum class ExtremeCheck : uint8_t { kAgree, kMin, kMax };
ExtremeCheck CheckExtremes(const MomentSummary& a, const MomentSummary& b, double epsilon);

// One tolerance: epsilon ~ 1e-2 accepts fp32 vs bf16/fp16 rounding noise,
// and still separates different data (see docs/MATCHING.md).
EquivalenceVerdict CompareFingerprints(const Fingerprint& a, const Fingerprint& b, double epsilon);
// The same decision without the reason (the matcher's hot path).
bool Equivalent(const Fingerprint& a, const Fingerprint& b, double epsilon);

// Serialisation into the trace's fingerprints(kind, data) table: written as
// "mfp3" (lossless; grid values as small integers; codec.cc), read as mfp3,
// as the "mfp2" of earlier traces or as the fixed-width "mfp1" of schema
// version 2 traces.
inline constexpr std::string_view kFingerprintKind = "mfp3";
std::string EncodeFingerprint(const Fingerprint& fp);  // the `data` blob, kind kFingerprintKind
StatusOr<Fingerprint> DecodeFingerprint(std::string_view kind, std::string_view data);

// By tensor id, as an analysis holds them, and the trace's table of them:
// fingerprint/fingerprint_map.h.

}  // namespace magneton
