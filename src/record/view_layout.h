// Hashes of how a tensor view lays its values out. Two parts need them and
// must agree on them: tensor identity keys a value by its full layout, and
// the fingerprint cache keys a view's fingerprint by the layout the
// fingerprint actually reads.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

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

}  // namespace magneton::record
