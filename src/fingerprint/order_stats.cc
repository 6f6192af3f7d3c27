#include "fingerprint/order_stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace magneton::fingerprint_internal {
namespace {

// Below this, selecting by partitioning beats the two passes of bucketing.
constexpr size_t kBucketMinValues = 512;
// Values per bucket on average: buckets holding a wanted rank are then small.
constexpr size_t kValuesPerBucket = 4;
// A bucket holding more than 1/kBigBucket of the values (an outlier
// stretched the range; half the values are zero) is bucketed again over its
// own range, at most kMaxDepth times.
constexpr size_t kBigBucket = 8;
constexpr int kMaxDepth = 4;

// Partitions v[lo, hi) so that each of ranks [rank_begin, rank_end) holds its
// order statistic: O(n log k).
void SelectRanks(std::vector<double>& v, size_t lo, size_t hi, const int64_t* rank_begin, const int64_t* rank_end) {
  if (rank_begin >= rank_end || lo >= hi) return;
  const int64_t* mid = rank_begin + (rank_end - rank_begin) / 2;
  std::nth_element(v.begin() + lo, v.begin() + *mid, v.begin() + hi);
  SelectRanks(v, lo, static_cast<size_t>(*mid), rank_begin, mid);
  SelectRanks(v, static_cast<size_t>(*mid) + 1, hi, mid + 1, rank_end);
}

std::vector<double> ByPartitioning(std::vector<double>& v, const std::vector<int64_t>& ranks) {
  SelectRanks(v, 0, v.size(), ranks.data(), ranks.data() + ranks.size());
  std::vector<double> out;
  out.reserve(ranks.size());
  for (int64_t r : ranks) out.push_back(v[static_cast<size_t>(r)]);
  return out;
}

// The smallest and largest of v (not empty, no NaN). Four running pairs in
// registers: std::minmax_element kept its extremes in memory, a store and a
// load a value (a third of a 3 072-value fingerprint's quantile time).
std::pair<double, double> Extremes(const std::vector<double>& v) {
  double lo[4], hi[4];
  for (int k = 0; k < 4; ++k) lo[k] = hi[k] = v[0];
  const size_t n = v.size();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      lo[k] = v[i + k] < lo[k] ? v[i + k] : lo[k];
      hi[k] = v[i + k] > hi[k] ? v[i + k] : hi[k];
    }
  }
  for (; i < n; ++i) {
    lo[0] = v[i] < lo[0] ? v[i] : lo[0];
    hi[0] = v[i] > hi[0] ? v[i] : hi[0];
  }
  return {std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3])),
          std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]))};
}

// Buckets of equal width over [min, max]: x goes to floor((x - min) * scale),
// which never decreases as x grows (IEEE subtraction and multiplication by a
// positive number are monotonic), so bucket order is value order. One pass
// counts; the wanted ranks name their buckets; a second pass gathers only
// those buckets' values, and each bucket's ranks are selected among its own
// values (a big bucket by bucketing again).
std::vector<double> SelectBucketed(std::vector<double>& v, const std::vector<int64_t>& ranks, int depth) {
  const size_t n = v.size();
  if (ranks.empty()) return {};
  if (n < kBucketMinValues || depth >= kMaxDepth) return ByPartitioning(v, ranks);
  const auto [lo, hi] = Extremes(v);
  if (lo == hi) return std::vector<double>(ranks.size(), lo);
  const size_t buckets = n / kValuesPerBucket;
  const double scale = static_cast<double>(buckets) / (hi - lo);
  if (!std::isfinite(hi - lo) || !std::isfinite(scale)) return ByPartitioning(v, ranks);
  const int64_t last = static_cast<int64_t>(buckets) - 1;
  // A signed conversion: x86 has no single instruction for double to
  // unsigned 64-bit, and the compiler's branchy one tripled this loop.
  auto bucket_of = [lo, scale, last](double x) {
    return static_cast<size_t>(std::min(last, static_cast<int64_t>((x - lo) * scale)));
  };
  // first[b]: how many values lie in buckets before b.
  std::vector<uint32_t> first(buckets + 1, 0);
  for (double x : v) ++first[bucket_of(x) + 1];
  for (size_t b = 1; b <= buckets; ++b) first[b] += first[b - 1];
  // The buckets holding a wanted rank (ascending, as the ranks are), and
  // where their values go in `picked`.
  constexpr uint32_t kNotWanted = UINT32_MAX;
  std::vector<uint32_t> cursor(buckets, kNotWanted);
  std::vector<size_t> wanted;
  std::vector<uint32_t> wanted_begin;
  uint32_t gathered = 0;
  for (int64_t r : ranks) {
    const auto upper = std::upper_bound(first.begin(), first.end(), static_cast<uint32_t>(r));
    const size_t b = static_cast<size_t>(upper - first.begin()) - 1;
    if (cursor[b] != kNotWanted) continue;
    cursor[b] = gathered;
    wanted.push_back(b);
    wanted_begin.push_back(gathered);
    gathered += first[b + 1] - first[b];
  }
  std::vector<double> picked(gathered);
  for (double x : v) {
    const size_t b = bucket_of(x);
    if (cursor[b] != kNotWanted) picked[cursor[b]++] = x;
  }
  std::vector<double> out;
  out.reserve(ranks.size());
  std::vector<int64_t> local;
  size_t i = 0;
  for (size_t k = 0; k < wanted.size(); ++k) {
    const size_t b = wanted[k];
    const size_t begin = wanted_begin[k], size = first[b + 1] - first[b];
    local.clear();
    for (; i < ranks.size() && static_cast<uint32_t>(ranks[i]) < first[b + 1]; ++i) {
      local.push_back(ranks[i] - first[b]);
    }
    if (size * kBigBucket > n) {
      std::vector<double> part(picked.begin() + begin, picked.begin() + begin + size);
      for (double x : SelectBucketed(part, local, depth + 1)) out.push_back(x);
      continue;
    }
    for (int64_t& r : local) r += static_cast<int64_t>(begin);
    SelectRanks(picked, begin, begin + size, local.data(), local.data() + local.size());
    for (int64_t r : local) out.push_back(picked[static_cast<size_t>(r)]);
  }
  return out;
}

}  // namespace

std::vector<double> SelectOrderStatistics(std::vector<double>* values, const std::vector<int64_t>& ranks) {
  return SelectBucketed(*values, ranks, 0);
}

}  // namespace magneton::fingerprint_internal
