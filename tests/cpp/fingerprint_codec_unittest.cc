#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "fingerprint/codec_io.h"
#include "fingerprint/codec_mfp1.h"

#include "fingerprint/fingerprint_map.h"
#include "test_util.h"

namespace magneton {
namespace {

Fingerprint Sample(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(24 * 16);
  for (auto& x : v) x = dist(rng);
  auto fp = ComputeFingerprint(TensorBuffer{v.data(), DType::kFloat32, {24, 16}, {}});
  EXPECT_TRUE(fp.ok());
  return std::move(fp).value();
}

TEST(FingerprintCodec, RoundTripsExactly) {
  Fingerprint fp = Sample(1);
  ASSERT_TRUE(fp.strong.present);
  ASSERT_FALSE(fp.strong.spectra.empty());
  const std::string blob = EncodeFingerprint(fp);
  auto back = DecodeFingerprint(kFingerprintKind, blob);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(EncodeFingerprint(*back), blob);
  EXPECT_TRUE(Equivalent(fp, *back, 0.0));
}

TEST(FingerprintCodec, RejectsTruncatedAndUnknown) {
  const std::string blob = EncodeFingerprint(Sample(2));
  for (size_t cut : {size_t{0}, size_t{1}, size_t{40}, blob.size() - 1}) {
    EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, blob.substr(0, cut)).ok()) << cut;
  }
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, blob + "x").ok());
  auto unknown = DecodeFingerprint("mfp9", blob);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("mfp9"), std::string::npos);
}

// A blob must be one the encoder writes: decoding then encoding gives the
// same bytes (fuzz/fingerprint_codec_fuzzer checks it). A strong-part flag
// other than 0 or 1 was once read as "present" and written back as 1.
TEST(FingerprintCodec, RejectsAFlagByteTheEncoderNeverWrites) {
  std::string blob = EncodeFingerprint(Sample(3));
  ASSERT_EQ(blob[0], 4 | 8);  // floating, strong part present, quantiles on their grid
  ASSERT_TRUE(DecodeFingerprint(kFingerprintKind, blob).ok());  // the positive twin
  blob[0] = static_cast<char>(0xFF);
  auto bad = DecodeFingerprint(kFingerprintKind, blob);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
}

// Counts no tensor has would overflow the comparison's arithmetic
// (finite_count(), the product of dims): such a blob is corrupt.
TEST(FingerprintCodec, RejectsCountsAndDimsNoTensorHas) {
  const Fingerprint good = Sample(4);
  ASSERT_TRUE(DecodeFingerprint(kFingerprintKind, EncodeFingerprint(good)).ok());  // the positive twin
  auto corrupt = [](Fingerprint fp) {
    auto r = DecodeFingerprint(kFingerprintKind, EncodeFingerprint(fp));
    return !r.ok() && r.status().code() == StatusCode::kCorrupt;
  };
  Fingerprint fp = good;
  fp.invariant.nan_count = fp.invariant.element_count + 1;
  EXPECT_TRUE(corrupt(fp));
  fp = good;
  fp.invariant.pos_inf_count = -1;
  EXPECT_TRUE(corrupt(fp));
  fp = good;
  fp.invariant.element_count = INT64_MIN;  // finite_count() overflowed on this
  fp.invariant.nan_count = INT64_MAX;
  EXPECT_TRUE(corrupt(fp));
  fp = good;
  fp.strong.dims[0] = INT64_MAX;  // the product of dims overflows
  EXPECT_TRUE(corrupt(fp));
  fp = good;
  fp.strong.core_dims[0] = fp.strong.dims[0] + 1;
  EXPECT_TRUE(corrupt(fp));
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameBits(a[i], b[i])) return false;
  }
  return true;
}

// Every field, doubles bit for bit (NaN payloads and -0.0 included): what
// "lossless" means here, checked without trusting the codec's own output.
void ExpectSameFields(const Fingerprint& a, const Fingerprint& b) {
  const LayoutInvariantPart& p = a.invariant;
  const LayoutInvariantPart& q = b.invariant;
  EXPECT_EQ(a.dtype_class, b.dtype_class);
  EXPECT_EQ(p.element_count, q.element_count);
  EXPECT_EQ(p.nan_count, q.nan_count);
  EXPECT_EQ(p.pos_inf_count, q.pos_inf_count);
  EXPECT_EQ(p.neg_inf_count, q.neg_inf_count);
  EXPECT_EQ(p.quantile_sample_size, q.quantile_sample_size);
  for (auto [x, y] : {std::pair{p.mean, q.mean}, {p.variance, q.variance}, {p.skewness, q.skewness},
                      {p.kurtosis, q.kurtosis}, {p.min, q.min}, {p.max, q.max}}) {
    EXPECT_TRUE(SameBits(x, y)) << x << " vs " << y;
  }
  for (int i = 0; i < kFingerprintQuantiles; ++i) EXPECT_TRUE(SameBits(p.quantiles[i], q.quantiles[i])) << i;
  ASSERT_EQ(a.strong.present, b.strong.present);
  EXPECT_EQ(a.strong.dims, b.strong.dims);
  EXPECT_EQ(a.strong.core_dims, b.strong.core_dims);
  ASSERT_EQ(a.strong.marginals.size(), b.strong.marginals.size());
  for (size_t k = 0; k < a.strong.marginals.size(); ++k) {
    EXPECT_EQ(a.strong.marginals[k].axis_size, b.strong.marginals[k].axis_size);
    EXPECT_TRUE(SameBits(a.strong.marginals[k].chunk_sums, b.strong.marginals[k].chunk_sums)) << k;
    EXPECT_EQ(a.strong.marginals[k].chunk_elements, b.strong.marginals[k].chunk_elements);
  }
  ASSERT_EQ(a.strong.spectra.size(), b.strong.spectra.size());
  for (size_t k = 0; k < a.strong.spectra.size(); ++k) {
    EXPECT_EQ(a.strong.spectra[k].rows, b.strong.spectra[k].rows);
    EXPECT_EQ(a.strong.spectra[k].cols, b.strong.spectra[k].cols);
    EXPECT_TRUE(SameBits(a.strong.spectra[k].singular_values, b.strong.spectra[k].singular_values)) << k;
  }
}

// The mfp1 and mfp2 blobs of real torch tensors (the fuzz corpus: float32,
// bfloat16, bool; ranks 0-4) read as what they are, and written as mfp3 lose
// nothing, in fewer bytes than mfp1.
TEST(FingerprintCodec, OlderCorpusBlobsConvertToMfp3Losslessly) {
  int converted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MAGNETON_FINGERPRINT_CORPUS)) {
    const std::string kind = entry.path().extension().string().substr(entry.path().extension().empty() ? 0 : 1);
    if (kind != "mfp1" && kind != "mfp2") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto old = DecodeFingerprint(kind, blob);
    ASSERT_TRUE(old.ok()) << entry.path() << ": " << old.status().message();
    const std::string mfp3 = EncodeFingerprint(*old);
    auto back = DecodeFingerprint(kFingerprintKind, mfp3);
    ASSERT_TRUE(back.ok()) << entry.path() << ": " << back.status().message();
    SCOPED_TRACE(entry.path().filename().string());
    ExpectSameFields(*old, *back);
    if (kind == "mfp1") {
      EXPECT_LT(mfp3.size(), blob.size());
      if (old->strong.present) {
        EXPECT_LT(mfp3.size() * 10, blob.size() * 8);  // at least 20% smaller
      }
    }
    ++converted;
  }
  EXPECT_GE(converted, 20);
}

// The mfp3 blobs of real torch tensors in the fuzz corpus (float32, bfloat16,
// bool, a scalar, a sampled 1024x300) decode and encode back to the very same
// bytes: a change of the format that would make earlier mfp3 traces unreadable
// or respelled fails here.
TEST(FingerprintCodec, Mfp3CorpusBlobsReadAndWriteBackTheSameBytes) {
  int read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MAGNETON_FINGERPRINT_CORPUS)) {
    if (entry.path().extension() != ".mfp3") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto fp = DecodeFingerprint(kFingerprintKind, blob);
    ASSERT_TRUE(fp.ok()) << entry.path() << ": " << fp.status().message();
    EXPECT_EQ(EncodeFingerprint(*fp), blob) << entry.path();
    ++read;
  }
  EXPECT_GE(read, 7);
}

// Values the packing treats specially come back bit for bit: +0 and -0, a
// repeat, float32-exact and not, NaN with a payload, infinities, subnormals,
// magnitudes beyond float32; extreme integers.
TEST(FingerprintCodec, EveryDoubleAndIntegerComesBackBitForBit) {
  Fingerprint fp = Sample(5);
  double nan_payload;
  const uint64_t nan_bits = 0x7ff8000000001234ull;
  std::memcpy(&nan_payload, &nan_bits, sizeof(nan_payload));
  const double specials[] = {0.0, -0.0, 0.5, 0.1, nan_payload, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(),
                             1e300, 3.0f * 1.0, static_cast<double>(std::numeric_limits<float>::max()),
                             static_cast<double>(std::numeric_limits<float>::max()) * 1.0000001};
  for (size_t i = 0; i < std::size(specials); ++i) {
    fp.invariant.quantiles[i] = specials[i];
    fp.invariant.quantiles[i + 12] = specials[i];
    fp.invariant.quantiles[i + 13] = specials[i];  // a repeat of the one before
  }
  fp.invariant.mean = -0.0;
  fp.invariant.quantile_sample_size = INT64_MAX;
  fp.invariant.element_count = INT64_MAX;
  {  // a last chunk unlike the others: a second run
    ChunkCounts& counts = fp.strong.marginals[0].chunk_elements;
    std::vector<int64_t> values(counts.size(), counts[0]);
    values.back() = 123456789;
    counts.clear();
    for (int64_t v : values) counts.push_back(v);
    ASSERT_EQ(counts.runs().size(), 2u);
  }
  const std::string blob = EncodeFingerprint(fp);
  auto back = DecodeFingerprint(kFingerprintKind, blob);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameFields(fp, *back);
  EXPECT_EQ(EncodeFingerprint(*back), blob);
}

// One fingerprint, one blob: spellings the encoder never writes (a longer
// varint, a tag where an earlier one holds the value, stray tag bits) are
// refused, each next to its positive twin.
TEST(FingerprintCodec, RefusesSpellingsTheEncoderNeverWrites) {
  Fingerprint zeros;
  zeros.invariant.element_count = 1;
  const std::string blob = EncodeFingerprint(zeros);
  // head, 5 counts, 2 tag bytes of the 6 moments (mean +0: tag 1, then 5
  // repeats: tag 0), 8 tag bytes of the 32 quantiles as doubles (rms 0: no grid).
  ASSERT_EQ(blob, std::string("\x00\x02\x00\x00\x00\x00\x01\x00\x01", 9) + std::string(7, '\0'));
  ASSERT_TRUE(DecodeFingerprint(kFingerprintKind, blob).ok());
  std::string longer = blob;
  longer.replace(1, 1, std::string("\x82\x00", 2));  // element_count 1 in two bytes
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, longer).ok());
  std::string zero_again = blob;
  zero_again[6] = 0x05;  // the second value spelled +0 instead of "repeat"
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, zero_again).ok());
  std::string raw_zero = blob;
  raw_zero[6] = 0x03;  // +0.0 as 8 raw bytes
  raw_zero.insert(8, std::string(8, '\0'));
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, raw_zero).ok());
  std::string stray = blob;
  stray[7] = 0x40;  // tag bits past the 6th moment
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, stray).ok());
  std::string repeat_first = blob;
  repeat_first[6] = 0x00;  // the first value cannot repeat one before it
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, repeat_first).ok());
  std::string grid_without_scale = blob;
  grid_without_scale[0] = 0x08;  // quantiles "on the grid" of an rms of 0
  EXPECT_FALSE(DecodeFingerprint(kFingerprintKind, grid_without_scale).ok());
}

// Values on their grid are stored as steps of it; the same values spelled as
// doubles are a second blob for one fingerprint, refused.
TEST(FingerprintCodec, RefusesGridValuesSpelledAsDoubles) {
  Fingerprint fp = Sample(6);
  fp.strong = StrongPart{};
  const std::string blob = EncodeFingerprint(fp);
  ASSERT_EQ(blob[0], 8);  // floating, no strong part, quantiles on their grid
  ASSERT_TRUE(DecodeFingerprint(kFingerprintKind, blob).ok());  // the positive twin
  fingerprint_codec::Writer w;
  const LayoutInvariantPart& p = fp.invariant;
  w.Byte(0);
  for (int64_t v : {p.element_count, p.nan_count, p.pos_inf_count, p.neg_inf_count, p.quantile_sample_size}) w.Int(v);
  w.Doubles(std::array<double, 6>{p.mean, p.variance, p.skewness, p.kurtosis, p.min, p.max});
  w.Doubles(p.quantiles);
  const std::string as_doubles = w.Take();
  EXPECT_GT(as_doubles.size(), blob.size());
  auto refused = DecodeFingerprint(kFingerprintKind, as_doubles);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kCorrupt);
  // Off the grid (one quantile nudged by an ulp) the doubles are the blob.
  fp.invariant.quantiles[3] = std::nextafter(fp.invariant.quantiles[3], 1e300);
  auto off_grid = DecodeFingerprint(kFingerprintKind, EncodeFingerprint(fp));
  ASSERT_TRUE(off_grid.ok()) << off_grid.status().message();
  EXPECT_EQ(off_grid->invariant.quantiles[3], fp.invariant.quantiles[3]);
}

// Packed integers have one spelling: the narrowest width, zero padding.
TEST(FingerprintCodec, PackedIntegersRefuseAWiderWidthAndSetPadding) {
  fingerprint_codec::Writer w;
  const std::vector<int64_t> values = {1, -1, 3, 0};
  w.Packed(values);  // zigzag 2, 1, 6, 0: 3 bits each, 12 bits in 2 bytes
  const std::string blob = w.Take();
  ASSERT_EQ(blob.size(), 3u);
  ASSERT_EQ(blob[0], 3);
  auto read = [](const std::string& b) {
    fingerprint_codec::Reader r(b);
    std::vector<int64_t> values;
    return r.Packed(4, &values) && r.AtEnd() ? values : std::vector<int64_t>{};
  };
  EXPECT_EQ(read(blob), (std::vector<int64_t>{1, -1, 3, 0}));  // the positive twin
  // The same values in 4-bit fields (zigzag 2, 1 | 6, 0): none needs the 4th bit.
  const std::string wider("\x04\x12\x06", 3);
  EXPECT_TRUE(read(wider).empty());
  std::string padding = blob;
  padding[2] = static_cast<char>(static_cast<uint8_t>(padding[2]) | 0x80);  // a bit past the 12th
  EXPECT_TRUE(read(padding).empty());
}

// Every blob the decoder accepts is one the encoder writes: mutations of real
// blobs (a byte changed, one dropped, one inserted) either fail to decode or
// decode to a fingerprint that encodes back to the mutated bytes. A small
// deterministic version of fuzz/fingerprint_codec_fuzzer that runs in ctest.
TEST(FingerprintCodec, MutatedBlobsDecodeOnlyToTheirOwnEncoding) {
  std::mt19937 rng(7);
  int accepted = 0;
  for (uint32_t seed = 10; seed < 14; ++seed) {
    const std::string blob = EncodeFingerprint(Sample(seed));
    for (int trial = 0; trial < 3000; ++trial) {
      std::string mutated = blob;
      const size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0: mutated[at] = static_cast<char>(rng()); break;
        case 1: mutated.erase(at, 1); break;
        default: mutated.insert(at, 1, static_cast<char>(rng())); break;
      }
      auto fp = DecodeFingerprint(kFingerprintKind, mutated);
      if (!fp.ok()) continue;
      ++accepted;
      ASSERT_EQ(EncodeFingerprint(*fp), mutated) << "seed " << seed << " trial " << trial;
    }
  }
  EXPECT_GT(accepted, 100);  // the mutations reach the decoder's far end, not only its first refusal
}

TEST(FingerprintCodec, TraceTableRoundTrip) {
  const std::string path = testing::WriteSampleTrace("fp.mtrace", 3);
  auto empty = LoadFingerprints(path);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
  FingerprintMap map;
  map[0] = Sample(3);
  map[2] = Sample(4);
  ASSERT_TRUE(WriteFingerprints(path, map).ok());
  auto loaded = LoadFingerprints(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ(EncodeFingerprint(loaded->at(2).Full()), EncodeFingerprint(Sample(4)));
  EXPECT_EQ(loaded->count(1), 0u);
  EXPECT_FALSE(LoadFingerprints(testing::TempPath("missing.mtrace")).ok());
}

// Ids reach a FingerprintMap in any order: one set while it was still beyond
// the dense array (kept in the hash map) is found after 70 000 more ids have
// grown the array past it (it was lost there before), and replaced there;
// negative and huge ids work and cost no memory.
TEST(FingerprintCodec, FingerprintMapFindsEveryIdWhateverTheOrder) {
  const Fingerprint one = Sample(1), two = Sample(2);
  FingerprintMap map;
  map[100'000] = one;
  map[-5] = one;
  map[int64_t{1} << 60] = two;
  for (int64_t id = 0; id < 70'000; ++id) map[id] = (id % 2 ? one : two);
  ASSERT_EQ(map.size(), 70'003u);
  ASSERT_TRUE(map.contains(100'000));
  EXPECT_EQ(EncodeFingerprint(map.at(100'000).Full()), EncodeFingerprint(one));
  map[100'000] = two;  // replaced where it is
  EXPECT_EQ(map.size(), 70'003u);
  EXPECT_EQ(EncodeFingerprint(map.at(100'000).Full()), EncodeFingerprint(two));
  EXPECT_EQ(EncodeFingerprint(map.at(-5).Full()), EncodeFingerprint(one));
  EXPECT_EQ(EncodeFingerprint(map.at(int64_t{1} << 60).Full()), EncodeFingerprint(two));
  EXPECT_EQ(EncodeFingerprint(map.at(69'999).Full()), EncodeFingerprint(one));
  EXPECT_FALSE(map.contains(70'000));
  EXPECT_FALSE(map.contains(99'999));
  map.KeepIf([](int64_t id) { return id >= 100'000 || id < 0; });
  EXPECT_EQ(map.size(), 3u);
  EXPECT_TRUE(map.contains(100'000) && map.contains(-5) && map.contains(int64_t{1} << 60));
  EXPECT_FALSE(map.contains(1));
}

// What an analysis holds (FingerprintMap): the strong part encoded on its own
// and decoded only when a comparison gets that far. It decodes to the very
// fingerprint stored, and the stored comparisons decide as the full ones,
// reason for reason: a transposed copy (strong parts compared over permuted
// axes), a reshaped one (strong parts not comparable), a shuffled one (the
// same values: only the strong part tells it apart), other data.
TEST(FingerprintCodec, StoredFingerprintsCompareAsTheFullOnes) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  std::vector<float> v(24 * 16);
  for (auto& x : v) x = dist(rng);
  std::vector<float> transposed(v.size()), shuffled = v;
  for (int i = 0; i < 24; ++i) {
    for (int j = 0; j < 16; ++j) transposed[j * 24 + i] = v[i * 16 + j];
  }
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  auto fp_of = [](const std::vector<float>& values, std::vector<int64_t> shape) {
    auto fp = ComputeFingerprint(TensorBuffer{values.data(), DType::kFloat32, std::move(shape), {}});
    EXPECT_TRUE(fp.ok());
    return std::move(fp).value();
  };
  const std::vector<Fingerprint> fps = {fp_of(v, {24, 16}), fp_of(transposed, {16, 24}), fp_of(v, {48, 8}),
                                        fp_of(shuffled, {24, 16}), Sample(5), fp_of({1.f, 2.f}, {2})};
  FingerprintMap map;
  for (size_t i = 0; i < fps.size(); ++i) map[static_cast<int64_t>(10 * i)] = fps[i];
  size_t strong_rejections = 0, strong_agreements = 0;
  for (size_t i = 0; i < fps.size(); ++i) {
    const StoredFingerprint& si = map.at(static_cast<int64_t>(10 * i));
    EXPECT_EQ(EncodeFingerprint(si.Full()), EncodeFingerprint(fps[i])) << i;
    for (size_t j = 0; j < fps.size(); ++j) {
      const StoredFingerprint& sj = map.at(static_cast<int64_t>(10 * j));
      const EquivalenceVerdict full = CompareFingerprints(fps[i], fps[j], 1e-2);
      const EquivalenceVerdict stored = CompareFingerprints(si, sj, 1e-2);
      EXPECT_EQ(stored.equivalent, full.equivalent) << i << " vs " << j;
      EXPECT_EQ(stored.reason, full.reason) << i << " vs " << j;
      EXPECT_EQ(Equivalent(si, sj, 1e-2), full.equivalent) << i << " vs " << j;
      EXPECT_EQ(SameStrongDims(si, sj),
                fps[i].strong.present && fps[j].strong.present && fps[i].strong.dims == fps[j].strong.dims);
      strong_rejections += full.reason.rfind("axis marginals", 0) == 0;
      strong_agreements += full.equivalent && i != j && fps[i].strong.present && fps[j].strong.present;
    }
  }
  EXPECT_GE(strong_rejections, 2u);  // the shuffled copy, both ways
  EXPECT_GE(strong_agreements, 2u);  // the transposed copy, both ways
}

// A stored fingerprint keeps its quantiles as int32 steps of their grid when
// they are on it (what a recorder writes) and as the doubles otherwise; either
// way each comes back bit for bit and compares as the full fingerprint does.
TEST(FingerprintCodec, StoredQuantilesComeBackBitForBitOnTheGridOrOff) {
  const Fingerprint recorded = Sample(11);  // rounded to its grids when made
  Fingerprint off_grid = recorded;           // quantiles a grid step can't hold
  for (int i = 0; i < kFingerprintQuantiles; ++i) off_grid.invariant.quantiles[i] += 1e-13 * (i + 1);
  Fingerprint negative_zero = recorded;  // -0.0 is 0 steps, which come back as +0.0
  negative_zero.invariant.quantiles[kFingerprintQuantiles / 2] = -0.0;
  Fingerprint outlier = recorded;  // 2^40 rms: beyond int32 steps of a 2^-18 rms grid
  outlier.invariant.quantiles.back() = std::ldexp(outlier.invariant.rms(), 40);
  const std::vector<std::pair<Fingerprint, bool>> cases = {
      {recorded, true}, {off_grid, false}, {negative_zero, false}, {outlier, false}};
  FingerprintMap map;
  for (size_t i = 0; i < cases.size(); ++i) map[static_cast<int64_t>(i)] = cases[i].first;
  for (size_t i = 0; i < cases.size(); ++i) {
    const StoredFingerprint& stored = map.at(static_cast<int64_t>(i));
    EXPECT_EQ(stored.quantiles.on_grid(), cases[i].second) << i;
    const Fingerprint back = stored.Full();
    EXPECT_EQ(std::memcmp(back.invariant.quantiles.data(), cases[i].first.invariant.quantiles.data(),
                          sizeof back.invariant.quantiles),
              0)
        << i;
    EXPECT_EQ(EncodeFingerprint(back), EncodeFingerprint(cases[i].first)) << i;
    for (size_t j = 0; j < cases.size(); ++j) {
      const EquivalenceVerdict full = CompareFingerprints(cases[i].first, cases[j].first, 1e-6);
      const EquivalenceVerdict from_map = CompareFingerprints(stored, map.at(static_cast<int64_t>(j)), 1e-6);
      EXPECT_EQ(from_map.equivalent, full.equivalent) << i << " vs " << j;
      EXPECT_EQ(from_map.reason, full.reason) << i << " vs " << j;
    }
  }
  // The outlier's last quantile tells it apart, from the map as in full.
  EXPECT_EQ(CompareFingerprints(map.at(0), map.at(3), 1e-6).reason.rfind("quantile 31 differs", 0), 0u);
}

}  // namespace
}  // namespace magneton
