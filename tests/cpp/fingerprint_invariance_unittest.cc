// Fingerprints survive layout changes and precision loss, and separate
// genuinely different tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "fingerprint/fingerprint.h"

namespace magneton {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float mean = 0.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Fingerprint Fp(const void* data, DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
  auto fp = ComputeFingerprint(TensorBuffer{data, dtype, std::move(shape), std::move(strides)});
  EXPECT_TRUE(fp.ok()) << fp.status().message();
  return fp.ok() ? std::move(fp).value() : Fingerprint{};
}

// Materialises the logical tensor (shape/strides over `src`) row-major.
std::vector<float> Contiguous(const std::vector<float>& src, const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> out;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    out.push_back(src[off]);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

uint16_t ToBf16(float f) {  // round to nearest even
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

uint16_t ToHalf(float f) {  // normal range only, round to nearest even
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t sign = (b >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((b >> 23) & 0xff) - 127 + 15;
  uint32_t mant = b & 0x7fffff;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

TEST(FingerprintInvariance, PermuteTransposeContiguousAreExact) {
  const std::vector<int64_t> shape = {4, 6, 5};
  auto data = Random(120, 1);
  Fingerprint base = Fp(data.data(), DType::kFloat32, shape);
  ASSERT_TRUE(base.strong.present);
  // permute(2, 0, 1) of the same buffer: shape [5,4,6], strides [1,30,5].
  std::vector<int64_t> pshape = {5, 4, 6}, pstrides = {1, 30, 5};
  Fingerprint permuted = Fp(data.data(), DType::kFloat32, pshape, pstrides);
  EXPECT_TRUE(CompareFingerprints(base, permuted, 1e-9).equivalent) << CompareFingerprints(base, permuted, 1e-9).reason;
  // transpose(0, 1): [6,4,5] strides [5,30,1]
  Fingerprint transposed = Fp(data.data(), DType::kFloat32, {6, 4, 5}, {5, 30, 1});
  EXPECT_TRUE(Equivalent(base, transposed, 1e-9));
  // .contiguous() of the permuted view.
  auto copy = Contiguous(data, pshape, pstrides);
  Fingerprint contiguous = Fp(copy.data(), DType::kFloat32, pshape);
  EXPECT_TRUE(Equivalent(base, contiguous, 1e-9)) << CompareFingerprints(base, contiguous, 1e-9).reason;
  // Size-1 dims do not matter (unsqueeze).
  Fingerprint unsqueezed = Fp(data.data(), DType::kFloat32, {4, 1, 6, 5});
  EXPECT_TRUE(Equivalent(base, unsqueezed, 1e-9));
}

TEST(FingerprintInvariance, ReshapeKeepsLayoutInvariantPart) {
  auto data = Random(120, 2);
  Fingerprint base = Fp(data.data(), DType::kFloat32, {4, 6, 5});
  Fingerprint flat = Fp(data.data(), DType::kFloat32, {120});
  Fingerprint merged = Fp(data.data(), DType::kFloat32, {4, 30});
  EXPECT_TRUE(Equivalent(base, flat, 1e-9)) << CompareFingerprints(base, flat, 1e-9).reason;
  EXPECT_TRUE(Equivalent(base, merged, 1e-9));
}

TEST(FingerprintInvariance, LargeSampledTensorsArePermutationExact) {
  // 300 x 400 = 120k elements: quantiles and strong part come from the grid.
  auto data = Random(300 * 400, 3);
  Fingerprint base = Fp(data.data(), DType::kFloat32, {300, 400});
  EXPECT_GT(base.invariant.quantile_sample_size, 0);
  ASSERT_TRUE(base.strong.present);
  Fingerprint transposed = Fp(data.data(), DType::kFloat32, {400, 300}, {1, 400});
  EXPECT_TRUE(Equivalent(base, transposed, 1e-9)) << CompareFingerprints(base, transposed, 1e-9).reason;
  // A reshape samples other elements: equal within the sampling error at 1e-2.
  Fingerprint reshaped = Fp(data.data(), DType::kFloat32, {120000});
  EXPECT_TRUE(Equivalent(base, reshaped, 1e-2)) << CompareFingerprints(base, reshaped, 1e-2).reason;
  // Different data of the same shape and distribution.
  auto other = Random(300 * 400, 4);
  Fingerprint different = Fp(other.data(), DType::kFloat32, {300, 400});
  EXPECT_FALSE(Equivalent(base, different, 1e-2));
}

TEST(FingerprintInvariance, ReducedPrecisionCopiesAreEquivalentAtOnePercent) {
  for (float mean : {0.f, 3.f}) {
    auto data = Random(64 * 48, 5, mean);
    std::vector<uint16_t> bf16, f16;
    for (float x : data) {
      bf16.push_back(ToBf16(x));
      f16.push_back(ToHalf(x));
    }
    Fingerprint fp32 = Fp(data.data(), DType::kFloat32, {64, 48});
    Fingerprint b = Fp(bf16.data(), DType::kBFloat16, {64, 48});
    Fingerprint h = Fp(f16.data(), DType::kFloat16, {64, 48});
    EXPECT_TRUE(Equivalent(fp32, b, 1e-2)) << CompareFingerprints(fp32, b, 1e-2).reason;
    EXPECT_TRUE(Equivalent(fp32, h, 1e-2)) << CompareFingerprints(fp32, h, 1e-2).reason;
    // bf16 and transposed: both changes at once.
    Fingerprint bt = Fp(bf16.data(), DType::kBFloat16, {48, 64}, {1, 48});
    EXPECT_TRUE(Equivalent(fp32, bt, 1e-2)) << CompareFingerprints(fp32, bt, 1e-2).reason;
    // bf16 noise is well above 1e-5.
    EXPECT_FALSE(Equivalent(fp32, b, 1e-5));
  }
}

TEST(FingerprintInvariance, DifferentDataIsNotEquivalent) {
  auto a = Random(32 * 24, 6);
  auto b = Random(32 * 24, 7);
  Fingerprint fa = Fp(a.data(), DType::kFloat32, {32, 24});
  Fingerprint fb = Fp(b.data(), DType::kFloat32, {32, 24});
  EXPECT_FALSE(Equivalent(fa, fb, 1e-2));

  std::vector<float> neg(a.size());
  std::transform(a.begin(), a.end(), neg.begin(), [](float x) { return -x; });
  EXPECT_FALSE(Equivalent(fa, Fp(neg.data(), DType::kFloat32, {32, 24}), 1e-2));

  // A shuffled copy has the same multiset of values: only the strong part sees it.
  std::vector<float> shuffled = a;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(8));
  Fingerprint fs = Fp(shuffled.data(), DType::kFloat32, {32, 24});
  EXPECT_FALSE(Equivalent(fa, fs, 1e-2));
  Fingerprint wa = fa, ws = fs;
  wa.strong = {};
  ws.strong = {};
  EXPECT_TRUE(Equivalent(wa, ws, 1e-9)) << CompareFingerprints(wa, ws, 1e-9).reason;
  EXPECT_FALSE(CompareFingerprints(fa, fs, 1e-2).reason.empty());
}

TEST(FingerprintInvariance, NanAndInfAreCountedNotAveraged) {
  auto a = Random(1000, 9);
  a[10] = std::numeric_limits<float>::quiet_NaN();
  a[500] = std::numeric_limits<float>::infinity();
  Fingerprint fa = Fp(a.data(), DType::kFloat32, {1000});
  EXPECT_EQ(fa.invariant.nan_count, 1);
  EXPECT_EQ(fa.invariant.pos_inf_count, 1);
  EXPECT_TRUE(std::isfinite(fa.invariant.mean));
  EXPECT_TRUE(std::isfinite(fa.invariant.variance));
  Fingerprint again = Fp(a.data(), DType::kFloat32, {10, 100});
  EXPECT_TRUE(Equivalent(fa, again, 1e-9));
  auto b = a;
  b[20] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(Equivalent(fa, Fp(b.data(), DType::kFloat32, {1000}), 1e-2));
  std::vector<float> all_nan(16, std::numeric_limits<float>::quiet_NaN());
  Fingerprint fn = Fp(all_nan.data(), DType::kFloat32, {16});
  EXPECT_EQ(fn.invariant.nan_count, 16);
  EXPECT_TRUE(Equivalent(fn, fn, 1e-2));
}

TEST(FingerprintInvariance, MomentsAreRightAndStableWithLargeOffset) {
  std::vector<double> v(100000);
  std::mt19937 rng(10);
  std::normal_distribution<double> dist(1e6, 1.0);
  for (auto& x : v) x = dist(rng);
  Fingerprint fp = Fp(v.data(), DType::kFloat64, {100000});
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size());
  EXPECT_NEAR(fp.invariant.mean, mean, 1e-6);
  EXPECT_NEAR(fp.invariant.variance, var, 1e-6 * var);
  EXPECT_NEAR(fp.invariant.kurtosis, 3.0, 0.1);
  EXPECT_NEAR(fp.invariant.skewness, 0.0, 0.05);
}

TEST(FingerprintInvariance, IntegerAndBoolDtypes) {
  std::vector<int64_t> ids = {5, 3, 9, 1, 5, 5, 2, 0};
  Fingerprint a = Fp(ids.data(), DType::kInt64, {2, 4});
  std::vector<int32_t> ids32(ids.begin(), ids.end());
  Fingerprint b = Fp(ids32.data(), DType::kInt32, {4, 2}, {1, 4});
  EXPECT_EQ(a.dtype_class, DTypeClass::kIntegral);
  EXPECT_TRUE(Equivalent(a, b, 1e-9));
  std::vector<uint8_t> mask = {1, 0, 1, 1};
  Fingerprint m = Fp(mask.data(), DType::kBool, {4});
  EXPECT_EQ(m.dtype_class, DTypeClass::kBool);
  EXPECT_DOUBLE_EQ(m.invariant.mean, 0.75);
  Fingerprint u = Fp(mask.data(), DType::kUInt8, {4});
  EXPECT_FALSE(Equivalent(m, u, 1e-2));  // bool vs integer: different classes
  EXPECT_TRUE(ParseDType("torch.bfloat16").ok());
  EXPECT_FALSE(ParseDType("complex64").ok());
}

TEST(FingerprintInvariance, BroadcastAndEmptyViews) {
  std::vector<float> row = {1, 2, 3};
  // expand([4,3]) of a [3] row: stride 0 on the first dim.
  Fingerprint expanded = Fp(row.data(), DType::kFloat32, {4, 3}, {0, 1});
  std::vector<float> tiled;
  for (int i = 0; i < 4; ++i) tiled.insert(tiled.end(), row.begin(), row.end());
  EXPECT_TRUE(Equivalent(expanded, Fp(tiled.data(), DType::kFloat32, {4, 3}), 1e-9));
  Fingerprint empty = Fp(nullptr, DType::kFloat32, {0, 3});
  EXPECT_EQ(empty.invariant.element_count, 0);
  EXPECT_FALSE(ComputeFingerprint(TensorBuffer{row.data(), DType::kFloat32, {3}, {1, 1}}).ok());
}

// Chunk element counts are held as runs: one run per axis for a power-of-two
// size (what keeps a decoded fingerprint small), and still every count for
// an axis that folds unevenly.
TEST(FingerprintInvariance, ChunkCountsAreRunsOfTheCountsTheyReplace) {
  const std::vector<float> square = Random(64 * 64, 7);
  const Fingerprint fp = Fp(square.data(), DType::kFloat32, {64, 64});
  ASSERT_TRUE(fp.strong.present);
  ASSERT_EQ(fp.strong.marginals.size(), 2u);
  for (const AxisMarginal& m : fp.strong.marginals) {
    EXPECT_EQ(m.chunk_elements.size(), 16u);
    ASSERT_EQ(m.chunk_elements.runs().size(), 1u);
    EXPECT_EQ(m.chunk_elements[15], 4 * 64);
  }
  // 100 rows fold into 16 chunks of 6 or 7 rows of 3 elements.
  const std::vector<float> uneven = Random(100 * 3, 8);
  const Fingerprint fu = Fp(uneven.data(), DType::kFloat32, {100, 3});
  ASSERT_TRUE(fu.strong.present);
  const ChunkCounts& counts = fu.strong.marginals[0].chunk_elements;
  ASSERT_EQ(counts.size(), 16u);
  std::vector<int64_t> expanded = counts.Expanded();
  int64_t total = 0;
  for (size_t k = 0; k < expanded.size(); ++k) {
    EXPECT_TRUE(expanded[k] == 18 || expanded[k] == 21) << k;
    EXPECT_EQ(counts[k], expanded[k]) << k;
    total += expanded[k];
  }
  EXPECT_EQ(total, 300);
  EXPECT_GT(counts.runs().size(), 1u);
  ChunkCounts rebuilt;
  for (int64_t v : expanded) rebuilt.push_back(v);
  EXPECT_EQ(rebuilt, counts);
  rebuilt.push_back(21);
  EXPECT_FALSE(rebuilt == counts);
}


// The recorder hands a value's fingerprint to a view that reads the same
// elements in the same order and differs only in size-1 dims (its
// ValueLayoutHash skips them): that is only right if the fingerprint is the
// same bit for bit. A view that reorders the elements is not such a view.
TEST(FingerprintInvariance, SizeOneDimsDoNotChangeTheEncodedFingerprint) {
  const std::vector<float> v = Random(12 * 64, 21);
  const std::string flat = EncodeFingerprint(Fp(v.data(), DType::kFloat32, {768}));
  EXPECT_EQ(EncodeFingerprint(Fp(v.data(), DType::kFloat32, {1, 768}, {768, 1})), flat);
  EXPECT_EQ(EncodeFingerprint(Fp(v.data(), DType::kFloat32, {1, 1, 768}, {0, 768, 1})), flat);
  const std::string grid = EncodeFingerprint(Fp(v.data(), DType::kFloat32, {12, 64}));
  EXPECT_EQ(EncodeFingerprint(Fp(v.data(), DType::kFloat32, {1, 12, 1, 64}, {768, 64, 64, 1})), grid);
  // Sampled (past the exact limit) as well.
  const std::vector<float> big = Random(300 * 400, 22);
  EXPECT_EQ(EncodeFingerprint(Fp(big.data(), DType::kFloat32, {1, 300, 1, 400}, {5, 400, 7, 1})),
            EncodeFingerprint(Fp(big.data(), DType::kFloat32, {300, 400})));
  // Other non-trivial dims, or the same ones in another order, change it.
  EXPECT_NE(grid, flat);
  EXPECT_NE(EncodeFingerprint(Fp(v.data(), DType::kFloat32, {64, 12}, {1, 64})), grid);
}

}  // namespace
}  // namespace magneton

namespace magneton {
namespace {

// The per-row marginal an mfp2-era fingerprint held: one chunk per row (64
// chunks for 64 rows), summed in fp64 and rounded to float32 as then.
AxisMarginal RowMarginalOf64Chunks(const std::vector<float>& v, int64_t rows, int64_t cols) {
  AxisMarginal m;
  m.axis_size = rows;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += v[static_cast<size_t>(r * cols + c)];
    m.chunk_sums.push_back(static_cast<float>(sum));
    m.chunk_elements.push_back(cols);
  }
  return m;
}

// A trace recorded before marginals fell from 64 chunks to 16 still matches
// one recorded after: the 64 chunks fold into the 16 (their boundaries are
// the 16's), and a row-shuffled tensor folded the same way still differs.
TEST(FingerprintInvariance, MarginalsOf64ChunksCompareWithThoseOf16) {
  const std::vector<float> v = Random(64 * 48, 21);
  const Fingerprint now = Fp(v.data(), DType::kFloat32, {64, 48});
  ASSERT_TRUE(now.strong.present);
  ASSERT_EQ(now.strong.marginals[0].chunk_sums.size(), 16u);
  Fingerprint before = now;
  before.strong.marginals[0] = RowMarginalOf64Chunks(v, 64, 48);
  EXPECT_TRUE(CompareFingerprints(now, before, 1e-5).equivalent) << CompareFingerprints(now, before, 1e-5).reason;
  EXPECT_TRUE(CompareFingerprints(before, now, 1e-5).equivalent);

  // Rows 0-31 swapped with rows 32-63: the same column sums, other row sums.
  std::vector<float> swapped(v.begin() + 32 * 48, v.end());
  swapped.insert(swapped.end(), v.begin(), v.begin() + 32 * 48);
  Fingerprint shuffled_before = now;
  shuffled_before.strong.marginals[0] = RowMarginalOf64Chunks(swapped, 64, 48);
  const EquivalenceVerdict differ = CompareFingerprints(now, shuffled_before, 1e-2);
  EXPECT_FALSE(differ.equivalent);
  EXPECT_NE(differ.reason.find("axis marginals"), std::string::npos) << differ.reason;
}

// The grids bound what storing a fingerprint moves: a tensor and a copy of
// it with every value nudged by one float32 ulp (what another summation
// order gives) stay equivalent at 1e-5, the smallest tolerance the case suite
// is scored at, and a tensor with one row changed does not.
TEST(FingerprintInvariance, GridRoundingStaysBelowTheSmallestScoredTolerance) {
  for (uint32_t seed : {31u, 32u, 33u}) {
    const std::vector<float> v = Random(96 * 80, seed, 0.3f);
    std::vector<float> nudged = v;
    for (float& x : nudged) x = std::nextafter(x, x > 0 ? 1e30f : -1e30f);
    const Fingerprint a = Fp(v.data(), DType::kFloat32, {96, 80});
    const Fingerprint b = Fp(nudged.data(), DType::kFloat32, {96, 80});
    const EquivalenceVerdict same = CompareFingerprints(a, b, 1e-5);
    EXPECT_TRUE(same.equivalent) << seed << ": " << same.reason;
    std::vector<float> one_row = v;
    for (int c = 0; c < 80; ++c) one_row[static_cast<size_t>(5 * 80 + c)] += 1.0f;
    const Fingerprint d = Fp(one_row.data(), DType::kFloat32, {96, 80});
    EXPECT_FALSE(CompareFingerprints(a, d, 1e-2).equivalent) << seed;
  }
}

// A permuted view of a value (its (size, stride) pairs in another order, same
// offset, distinct strides) with the value's invariant part known: the same
// encoded fingerprint, bit for bit, as computing it from scratch, exact and
// sampled sizes, with and without NaN (--values reuses the invariant part of
// a KV cache's transposes, record/fingerprint_cache.h).
TEST(FingerprintInvariance, AKnownInvariantPartGivesTheFingerprintComputedFromScratch) {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<size_t> perm;
  };
  const std::vector<Case> cases = {
      {{6, 7}, {1, 0}},
      {{4, 5, 6}, {2, 0, 1}},
      {{1, 12, 37, 64}, {0, 2, 1, 3}},  // above the --values exact size: a sampled grid
      {{3, 40, 50}, {1, 2, 0}},
  };
  const FingerprintOptions options = ValueFingerprintOptions();
  for (bool with_nan : {false, true}) {
    for (const Case& c : cases) {
      int64_t n = 1;
      for (int64_t s : c.shape) n *= s;
      std::vector<float> values = Random(static_cast<size_t>(n), 17, 0.3f);
      if (with_nan) values[static_cast<size_t>(n / 3)] = std::numeric_limits<float>::quiet_NaN();
      std::vector<int64_t> strides(c.shape.size());
      for (int64_t d = static_cast<int64_t>(c.shape.size()) - 1, step = 1; d >= 0; --d) {
        strides[static_cast<size_t>(d)] = step;
        step *= c.shape[static_cast<size_t>(d)];
      }
      std::vector<int64_t> view_shape, view_strides;
      for (size_t d : c.perm) {
        view_shape.push_back(c.shape[d]);
        view_strides.push_back(strides[d]);
      }
      auto value = ComputeFingerprint(TensorBuffer{values.data(), DType::kFloat32, c.shape, strides}, options);
      ASSERT_TRUE(value.ok());
      const TensorBuffer view{values.data(), DType::kFloat32, view_shape, view_strides};
      auto scratch = ComputeFingerprint(view, options);
      auto known = ComputeFingerprintWithInvariant(view, value->invariant, options);
      ASSERT_TRUE(scratch.ok() && known.ok()) << known.status().message();
      EXPECT_EQ(EncodeFingerprint(*known), EncodeFingerprint(*scratch)) << "case of " << n << " nan " << with_nan;
      // NaN in the grid: no strong part (compared by count); else one, read in the view's order.
      EXPECT_EQ(known->strong.present, scratch->strong.present);
      if (!with_nan) EXPECT_TRUE(known->strong.present);
      if (known->strong.present) EXPECT_NE(EncodeFingerprint(*known), EncodeFingerprint(*value)) << "the strong part reads the view's order";
    }
  }
  // The invariant part is taken, not computed again; a wrong count is refused.
  std::vector<float> values = Random(20, 3);
  const TensorBuffer buffer{values.data(), DType::kFloat32, {4, 5}, {}};
  LayoutInvariantPart told = ComputeFingerprint(buffer, options)->invariant;
  told.mean += 1;
  auto taken = ComputeFingerprintWithInvariant(buffer, told, options);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->invariant.mean, told.mean);
  told.element_count = 21;
  EXPECT_FALSE(ComputeFingerprintWithInvariant(buffer, told, options).ok());
}

}  // namespace
}  // namespace magneton
