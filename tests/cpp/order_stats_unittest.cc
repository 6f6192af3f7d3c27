// Exact order statistics (the quantile step) against std::sort, on the value
// shapes that defeat bucketing by value: an outlier stretching the range,
// half the values zero, a handful of distinct values, a geometric spread, a
// range near the double's limits.
#include "fingerprint/order_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace magneton::fingerprint_internal {
namespace {

std::vector<int64_t> QuantileRanks(size_t n) {
  std::vector<int64_t> ranks;
  for (int i = 0; i < 32; ++i) {
    const auto k = static_cast<int64_t>(std::floor((i + 0.5) / 32 * static_cast<double>(n - 1)));
    ranks.push_back(k);
    if (k + 1 < static_cast<int64_t>(n)) ranks.push_back(k + 1);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

void ExpectExact(const std::vector<double>& input, const std::vector<int64_t>& ranks, const std::string& what) {
  std::vector<double> sorted = input;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> work = input;
  const std::vector<double> got = SelectOrderStatistics(&work, ranks);
  ASSERT_EQ(got.size(), ranks.size()) << what;
  for (size_t i = 0; i < ranks.size(); ++i) {
    ASSERT_EQ(got[i], sorted[static_cast<size_t>(ranks[i])]) << what << ": rank " << ranks[i] << " of " << input.size();
  }
}

std::vector<double> Values(const std::string& kind, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.25f, 2.0f);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    const double x = normal(rng);
    if (kind == "normal") v[i] = x;
    if (kind == "outlier") v[i] = i == n / 3 ? 1e9 : x;
    if (kind == "half_zero") v[i] = i % 2 ? std::max(x, 0.0) : 0.0;
    if (kind == "few_values") v[i] = static_cast<double>(rng() % 4);
    if (kind == "geometric") v[i] = std::ldexp(1.0, -static_cast<int>(rng() % 200));
    if (kind == "huge_range") v[i] = i % 3 == 0 ? x * 1e300 : (i % 3 == 1 ? -1.7e308 : 1.7e308);
    if (kind == "signed_zeros") v[i] = i % 5 == 0 ? -0.0 : (i % 5 == 1 ? 0.0 : x);
  }
  return v;
}

TEST(OrderStatistics, QuantileRanksMatchASortOnEveryValueShape) {
  for (const char* kind :
       {"normal", "outlier", "half_zero", "few_values", "geometric", "huge_range", "signed_zeros"}) {
    for (size_t n : {1, 2, 100, 511, 512, 513, 3072, 8192, 65536}) {
      ExpectExact(Values(kind, n, static_cast<uint32_t>(n)), QuantileRanks(n), kind);
    }
  }
}

TEST(OrderStatistics, EveryRankAndSparseRanks) {
  const std::vector<double> v = Values("normal", 2000, 3);
  std::vector<int64_t> all(v.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  ExpectExact(v, all, "every rank");
  ExpectExact(v, {0}, "the minimum");
  ExpectExact(v, {1999}, "the maximum");
  ExpectExact(v, {0, 1, 1998, 1999}, "both ends");
  ExpectExact(Values("outlier", 2000, 4), all, "every rank, outlier");
}

TEST(OrderStatistics, AllEqual) {
  ExpectExact(std::vector<double>(4096, -3.5), QuantileRanks(4096), "constant");
  std::vector<double> empty_ranks_values(10, 1.0);
  EXPECT_TRUE(SelectOrderStatistics(&empty_ranks_values, {}).empty());
}

}  // namespace
}  // namespace magneton::fingerprint_internal
