// Hashes of how a tensor view lays its values out. Two parts need them and
// must agree on them: tensor identity keys a value by its full layout, and
// the fingerprint cache keys a view's fingerprint by the layout the
// fingerprint actually reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "magneton/recorder.h"
#include "base/hash_mix.h"

namespace magneton::record {

// dtype, device, and each dim's size and stride; skip_size_one leaves out
// the dims of size 1.
inline uint64_t HashLayout(const TensorView& t, bool skip_size_one) {
  uint64_t h = std::hash<std::string_view>{}(t.dtype);
  h = Mix(h, std::hash<std::string_view>{}(t.device));
  uint64_t kept = 0;
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (skip_size_one && t.sizes[i] == 1) continue;
    h = Mix(h, static_cast<uint64_t>(t.sizes[i]));
    h = Mix(h, t.strides ? static_cast<uint64_t>(t.strides[i]) : 0);
    ++kept;
  }
  return Mix(Mix(h, kept), t.strides ? 1 : 0);
}

// A tensor's identity: every dim counts (a (1, n) view is not its (n) value).
inline uint64_t LayoutHash(const TensorView& t) { return HashLayout(t, /*skip_size_one=*/false); }

// What a fingerprint reads of a view's layout: the fingerprint stage reads a
// value through its dims of size > 1 only (MakeSampleGrid, the strong part),
// so two views of one value that differ only in size-1 dims (unsqueeze;
// view(1, 1, n) of a (1, n) result) have one fingerprint, bit for bit
// (tests/cpp/fingerprint_invariance_unittest.cc).
inline uint64_t ValueLayoutHash(const TensorView& t) { return HashLayout(t, /*skip_size_one=*/true); }

// The elements a view reads, as a set: the (size, stride) pairs of its dims
// of size > 1, sorted, with its dtype's hash first. Two views of one value at
// the same offset with equal sets read the very same elements, in another
// order (a transpose or permute), and the fingerprint stage gives them one
// invariant part bit for bit (ComputeFingerprintWithInvariant). Empty when
// two such dims share an |stride|: the memory-order traversal of the moments
// would then depend on the dims' order.
inline std::vector<int64_t> ElementSet(const TensorView& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  int64_t contiguous_stride = 1;
  for (int32_t i = t.ndim; i-- > 0;) {
    const int64_t stride = t.strides ? t.strides[i] : contiguous_stride;
    contiguous_stride *= t.sizes[i];
    if (t.sizes[i] != 1) dims.emplace_back(stride, t.sizes[i]);
  }
  std::sort(dims.begin(), dims.end());
  for (size_t k = 0; k < dims.size(); ++k) {
    for (size_t j = k + 1; j < dims.size(); ++j) {
      if (std::llabs(dims[k].first) == std::llabs(dims[j].first)) return {};
    }
  }
  std::vector<int64_t> out = {static_cast<int64_t>(std::hash<std::string_view>{}(t.dtype))};
  for (const auto& [stride, size] : dims) {
    out.push_back(size);
    out.push_back(stride);
  }
  return out;
}

}  // namespace magneton::record
