// SmallVector (base/small_vector.h) against std::vector: the same values
// after every operation, in place and on the heap.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "base/small_vector.h"

namespace magneton {
namespace {

struct Pair {
  int64_t a = -1;
  int64_t b = -1;
  bool operator==(const Pair&) const = default;
};

template <typename T, uint32_t N>
void ExpectSame(const SmallVector<T, N>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got.empty(), want.empty());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  EXPECT_EQ(got.to_vector(), want);
}

TEST(SmallVector, DoesWhatAVectorDoesInPlaceAndOnTheHeap) {
  std::mt19937 rng(7);
  SmallVector<int64_t, 1> got, other;
  std::vector<int64_t> want, other_want;
  for (int step = 0; step < 4000; ++step) {
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {
        const auto v = static_cast<int64_t>(rng());
        got.push_back(v);
        want.push_back(v);
        break;
      }
      case 3:  // a value of its own, while it may grow
        if (!want.empty()) {
          got.push_back(got.front());
          want.push_back(want.front());
        }
        break;
      case 4:
        other = got;  // copy
        other_want = want;
        break;
      case 5:
        std::swap(got, other);  // moves both ways
        std::swap(want, other_want);
        break;
      case 6:
        if (rng() % 4 == 0) {
          got.clear();
          want.clear();
        }
        break;
      case 7: {
        SmallVector<int64_t, 1> moved(std::move(got));
        ExpectSame(got, {});
        got = std::move(moved);
        break;
      }
    }
    ExpectSame(got, want);
    ExpectSame(other, other_want);
  }
  got = got;  // self-assignment keeps the values
  ExpectSame(got, want);
}

TEST(SmallVector, HoldsStructsAndReadsAsARange) {
  SmallVector<Pair, 1> cut = {{1, 2}};
  EXPECT_EQ(sizeof(cut), 24u);  // a vector's 24 bytes, and no heap block for one value
  EXPECT_EQ(cut.front(), (Pair{1, 2}));
  cut.emplace_back(3, 4);
  cut.push_back({5, 6});
  const std::vector<Pair> want = {{1, 2}, {3, 4}, {5, 6}};
  ExpectSame(cut, want);
  const std::span<const Pair> view = cut;
  EXPECT_EQ(view.size(), 3u);
  EXPECT_EQ(view.back(), (Pair{5, 6}));
  EXPECT_EQ(cut, (SmallVector<Pair, 1>(want)));
  EXPECT_FALSE(cut == (SmallVector<Pair, 1>{{1, 2}}));
  SmallVector<int32_t, 2> nodes;
  EXPECT_EQ(sizeof(nodes), 16u);
  const std::vector<int32_t> three = {7, 8, 9};
  nodes.assign(three.begin(), three.end());
  ExpectSame(nodes, three);
  nodes.assign(three.begin(), three.begin());  // none
  EXPECT_TRUE(nodes.empty());
}

}  // namespace
}  // namespace magneton
