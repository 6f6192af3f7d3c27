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
