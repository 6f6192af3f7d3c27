#include <gtest/gtest.h>

#include <random>

#include "fingerprint/fingerprint.h"
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
  ASSERT_EQ(blob[1], 1);
  ASSERT_TRUE(DecodeFingerprint(kFingerprintKind, blob).ok());  // the positive twin
  blob[1] = static_cast<char>(0xFF);
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

TEST(FingerprintCodec, TraceTableRoundTrip) {
  const std::string path = testing::WriteSampleTrace("fp.mtrace", 3);
  auto empty = LoadFingerprints(path);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
  FingerprintMap map;
  map.emplace(0, Sample(3));
  map.emplace(2, Sample(4));
  ASSERT_TRUE(WriteFingerprints(path, map).ok());
  auto loaded = LoadFingerprints(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ(EncodeFingerprint(loaded->at(2)), EncodeFingerprint(map.at(2)));
  EXPECT_FALSE(LoadFingerprints(testing::TempPath("missing.mtrace")).ok());
}

}  // namespace
}  // namespace magneton
