// Reading strided tensors of any supported dtype as doubles, in memory order.
// Internal to the fingerprint stage.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "fingerprint/fingerprint.h"

namespace magneton::fingerprint_internal {

float HalfToFloat(uint16_t h);
float BFloat16ToFloat(uint16_t b);

// Converts `count` elements at data + (offset + k * stride) elements to double.
void LoadElements(DType dtype, const void* data, int64_t offset, int64_t count, int64_t stride, double* out);
double LoadElement(DType dtype, const void* data, int64_t offset);
// Converts the elements at data + (base + offsets[k]) to double: one dtype
// dispatch per call, not per element (the sample grid's gather).
void LoadAtOffsets(DType dtype, const void* data, int64_t base, const int64_t* offsets, int64_t count, double* out);

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape);

// A strided view reordered for traversal: size-1 dims dropped, dims sorted by
// |stride| (outermost largest) and merged where they are contiguous, so a
// contiguous or permuted-contiguous tensor becomes a single run.
struct RunLayout {
  std::vector<int64_t> sizes;    // outer to inner; never empty (a scalar is {1})
  std::vector<int64_t> strides;  // elements
};
RunLayout CoalesceForTraversal(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);

// Calls fn(offset_elements, count, stride_elements) for every innermost run.
template <typename Fn>
void ForEachRun(const RunLayout& layout, Fn&& fn) {
  const size_t rank = layout.sizes.size();
  for (int64_t s : layout.sizes) {
    if (s == 0) return;
  }
  const int64_t inner_size = layout.sizes[rank - 1];
  const int64_t inner_stride = layout.strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  while (true) {
    fn(offset, inner_size, inner_stride);
    // Odometer over the outer dims.
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++index[d] < layout.sizes[d]) {
        offset += layout.strides[d];
        break;
      }
      offset -= layout.strides[d] * (layout.sizes[d] - 1);
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

}  // namespace magneton::fingerprint_internal
