// The waste / trade-off / equal rule and its boundaries (method.md section 6).
#include <gtest/gtest.h>

#include "detect/detect.h"

namespace magneton::detect {
namespace {

TEST(DetectClassify, CheaperFasterSameOutputsIsWaste) {
  EXPECT_EQ(Classify({200, 2000}, {100, 1000}, true, {}), Verdict::kWaste);
  EXPECT_EQ(Classify({100, 1000}, {200, 2000}, true, {}), Verdict::kWaste);
}

TEST(DetectClassify, CheaperButSlowerIsTradeOff) {
  EXPECT_EQ(Classify({200, 1000}, {100, 1020}, true, {}), Verdict::kTradeOff);
}

TEST(DetectClassify, SlowdownBoundaryIsOnePercent) {
  EXPECT_EQ(Classify({200, 1000}, {100, 1010}, true, {}), Verdict::kWaste);  // exactly 1% slower: allowed
  EXPECT_EQ(Classify({200, 1000}, {100, 1011}, true, {}), Verdict::kTradeOff);
}

TEST(DetectClassify, DifferentOutputsIsTradeOff) {
  EXPECT_EQ(Classify({200, 2000}, {100, 1000}, false, {}), Verdict::kTradeOff);
}

TEST(DetectClassify, TauBoundary) {
  Options o;  // tau 0.10
  EXPECT_EQ(Classify({110, 1000}, {100, 1000}, true, o), Verdict::kEqual);  // exactly 10%: not more than tau
  EXPECT_EQ(Classify({110.01, 1000}, {100, 1000}, true, o), Verdict::kWaste);
  o.tau = 0.2;
  EXPECT_EQ(Classify({115, 1000}, {100, 1000}, true, o), Verdict::kEqual);
}

TEST(DetectClassify, ZeroOnOneSide) {
  EXPECT_EQ(Classify({50, 100}, {0, 0}, true, {}), Verdict::kWaste);
  EXPECT_EQ(Classify({0, 0}, {0, 0}, true, {}), Verdict::kEqual);
}

TEST(DetectFormat, EnergyCarriesProvenance) {
  EXPECT_EQ(FormatEnergy(1500, Provenance::kEstimated), "1.5 mJ (estimated)");
  EXPECT_EQ(FormatEnergy(2.5e6, Provenance::kMeasured), "2.5 J (measured)");
}

}  // namespace
}  // namespace magneton::detect
