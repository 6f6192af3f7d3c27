// The deterministic sample grid shared by quantiles and the strong part
// (internal). Positions along an axis depend only on that axis's size and the
// tensor's shape multiset, so permuting dims permutes the grid with them.
#pragma once

#include <cstdint>
#include <vector>

#include "fingerprint/fingerprint.h"

namespace magneton::fingerprint_internal {

struct SampleGrid {
  std::vector<int> axes;                          // non-trivial axes of the shape, in order
  std::vector<int64_t> full_sizes;                // shape[axes[k]]
  std::vector<std::vector<int64_t>> positions;    // per axis, ascending
  // The tensor has no elements (a size-0 axis, which is not among `axes`):
  // the grid is empty even when every listed axis has positions.
  bool empty = false;
  int64_t element_count() const;
  bool exact() const;
  std::vector<int64_t> core_sizes() const;
};

SampleGrid MakeSampleGrid(const std::vector<int64_t>& shape, int64_t exact_max_elements);

// The grid's elements in row-major order of the grid (values converted to double).
std::vector<double> GatherGrid(const TensorBuffer& tensor, const std::vector<int64_t>& strides,
                               const SampleGrid& grid);

}  // namespace magneton::fingerprint_internal
