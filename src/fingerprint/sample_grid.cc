#include "fingerprint/sample_grid.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "fingerprint/strided.h"

namespace magneton::fingerprint_internal {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// m jittered positions in [0, n): one per stratum [j*n/m, (j+1)*n/m), so they
// are distinct, spread out, and not aliased with periodic structure.
std::vector<int64_t> JitteredPositions(int64_t n, int64_t m) {
  std::vector<int64_t> out(static_cast<size_t>(m));
  if (m == n) {
    for (int64_t j = 0; j < n; ++j) out[j] = j;
    return out;
  }
  const double width = static_cast<double>(n) / static_cast<double>(m);
  for (int64_t j = 0; j < m; ++j) {
    const uint64_t h = SplitMix64(static_cast<uint64_t>(n) * 0x100000001b3ull ^ static_cast<uint64_t>(j) * 31 ^
                                  static_cast<uint64_t>(m) << 40);
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    int64_t p = static_cast<int64_t>((static_cast<double>(j) + u) * width);
    const int64_t lo = static_cast<int64_t>(std::ceil(static_cast<double>(j) * width));
    p = std::clamp(p, lo, n - 1);
    out[j] = p;
  }
  return out;
}

}  // namespace

int64_t SampleGrid::element_count() const {
  if (empty) return 0;
  int64_t n = 1;
  for (const auto& p : positions) n *= static_cast<int64_t>(p.size());
  return n;
}

bool SampleGrid::exact() const {
  for (size_t k = 0; k < positions.size(); ++k) {
    if (static_cast<int64_t>(positions[k].size()) != full_sizes[k]) return false;
  }
  return true;
}

std::vector<int64_t> SampleGrid::core_sizes() const {
  std::vector<int64_t> out;
  for (const auto& p : positions) out.push_back(static_cast<int64_t>(p.size()));
  return out;
}

SampleGrid MakeSampleGrid(const std::vector<int64_t>& shape, int64_t exact_max_elements) {
  SampleGrid grid;
  int64_t total = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    total *= shape[d];
    if (shape[d] > 1) {
      grid.axes.push_back(static_cast<int>(d));
      grid.full_sizes.push_back(shape[d]);
    }
  }
  grid.positions.resize(grid.axes.size());
  if (total == 0) {
    grid.empty = true;
    for (auto& p : grid.positions) p.clear();
    return grid;
  }
  std::map<int64_t, int64_t> picks;  // axis size -> positions per axis of that size
  if (total <= exact_max_elements) {
    for (int64_t n : grid.full_sizes) picks[n] = n;
  } else {
    // About n/256 elements (at least 4096, at most the exact limit): enough for
    // quantiles to ~1% of the spread, cheap next to the full moment pass.
    double budget = static_cast<double>(std::clamp<int64_t>(total / 256, 4096, exact_max_elements));
    double remaining_elements = static_cast<double>(total);
    std::map<int64_t, int> count_by_size;
    for (int64_t n : grid.full_sizes) count_by_size[n]++;
    int remaining_axes = static_cast<int>(grid.full_sizes.size());
    // Smallest sizes first, all axes of one size at once (so equal-size axes
    // get equal picks and a permutation cannot change the grid).
    for (const auto& [n, count] : count_by_size) {
      const double fraction = std::pow(budget / remaining_elements, 1.0 / remaining_axes);
      const int64_t m = std::clamp<int64_t>(std::llround(static_cast<double>(n) * fraction), 1, n);
      picks[n] = m;
      budget /= std::pow(static_cast<double>(m), count);
      remaining_elements /= std::pow(static_cast<double>(n), count);
      remaining_axes -= count;
    }
  }
  for (size_t k = 0; k < grid.full_sizes.size(); ++k) {
    grid.positions[k] = JitteredPositions(grid.full_sizes[k], picks[grid.full_sizes[k]]);
  }
  return grid;
}

std::vector<double> GatherGrid(const TensorBuffer& tensor, const std::vector<int64_t>& strides,
                               const SampleGrid& grid) {
  std::vector<double> out;
  const int64_t count = grid.element_count();
  if (count == 0) return out;
  const size_t rank = grid.axes.size();
  if (rank == 0) {
    out.push_back(LoadElement(tensor.dtype, tensor.data, 0));
    return out;
  }
  std::vector<int64_t> axis_stride(rank);
  for (size_t k = 0; k < rank; ++k) axis_stride[k] = strides[grid.axes[k]];
  // Element offsets of each axis's positions, precomputed.
  std::vector<std::vector<int64_t>> step(rank);
  for (size_t k = 0; k < rank; ++k) {
    for (int64_t p : grid.positions[k]) step[k].push_back(p * axis_stride[k]);
  }
  std::vector<size_t> index(rank, 0);
  const auto& inner = step[rank - 1];
  // Every position of the innermost axis (an exact grid): one strided run,
  // converted by the vectorised loop when the axis is contiguous.
  const bool inner_whole = static_cast<int64_t>(inner.size()) == grid.full_sizes[rank - 1];
  const int64_t inner_count = static_cast<int64_t>(inner.size());
  out.resize(static_cast<size_t>(count));
  double* dst = out.data();
  while (true) {
    int64_t base = 0;
    for (size_t k = 0; k + 1 < rank; ++k) base += step[k][index[k]];
    if (inner_whole) {
      LoadElements(tensor.dtype, tensor.data, base, inner_count, axis_stride[rank - 1], dst);
    } else {
      LoadAtOffsets(tensor.dtype, tensor.data, base, inner.data(), inner_count, dst);
    }
    dst += inner_count;
    size_t d = rank - 1;
    bool done = true;
    while (d > 0) {
      --d;
      if (++index[d] < step[d].size()) {
        done = false;
        break;
      }
      index[d] = 0;
    }
    if (done) break;
  }
  return out;
}

}  // namespace magneton::fingerprint_internal
