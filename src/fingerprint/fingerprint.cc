// ComputeFingerprint: one full pass for moments, a small gathered grid for
// quantiles and the strong part.
#include <algorithm>
#include <cmath>

#include "fingerprint/assemble.h"
#include "fingerprint/moments.h"
#include "fingerprint/sample_grid.h"
#include "fingerprint/strided.h"
#include "fingerprint/fingerprint.h"

namespace magneton {

using namespace fingerprint_internal;

double InvariantMoments::rms() const { return std::sqrt(mean * mean + variance); }

ChunkCounts::ChunkCounts(std::initializer_list<int64_t> values) {
  for (int64_t v : values) push_back(v);
}

void ChunkCounts::push_back(int64_t value) {
  if (!runs_.empty() && runs_.back().value == value) {
    ++runs_.back().length;
  } else {
    runs_.push_back({value, 1});
  }
  ++size_;
}

void ChunkCounts::clear() {
  runs_.clear();
  size_ = 0;
}

int64_t ChunkCounts::operator[](size_t k) const {
  for (const Run& r : runs_) {
    if (k < static_cast<size_t>(r.length)) return r.value;
    k -= static_cast<size_t>(r.length);
  }
  return 0;  // out of range, as a vector's would be undefined
}

std::vector<int64_t> ChunkCounts::Expanded() const {
  std::vector<int64_t> out;
  out.reserve(size_);
  for (const Run& r : runs_) out.insert(out.end(), static_cast<size_t>(r.length), r.value);
  return out;
}

namespace {

// The tensor's element count, or why it cannot be fingerprinted.
StatusOr<int64_t> CheckedCount(const TensorBuffer& tensor) {
  if (!tensor.strides.empty() && tensor.strides.size() != tensor.shape.size()) {
    return InvalidArgument("fingerprint: strides have " + std::to_string(tensor.strides.size()) +
                           " entries for a rank-" + std::to_string(tensor.shape.size()) + " shape");
  }
  int64_t count = 1;
  for (int64_t s : tensor.shape) {
    if (s < 0) return InvalidArgument("fingerprint: negative dimension in shape");
    count *= s;
  }
  if (count > 0 && tensor.data == nullptr) return InvalidArgument("fingerprint: null data for a non-empty tensor");
  return count;
}

}  // namespace

StatusOr<Fingerprint> ComputeFingerprintWithInvariant(const TensorBuffer& tensor, const LayoutInvariantPart& invariant,
                                                      const FingerprintOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(const int64_t count, CheckedCount(tensor));
  if (invariant.element_count != count) {
    return InvalidArgument("fingerprint: a known invariant part of " + std::to_string(invariant.element_count) +
                           " elements for a tensor of " + std::to_string(count));
  }
  const std::vector<int64_t> strides = tensor.strides.empty() ? ContiguousStrides(tensor.shape) : tensor.strides;
  const SampleGrid grid = MakeSampleGrid(tensor.shape, std::max<int64_t>(options.exact_max_elements, 1));
  return AssembleWithInvariant(tensor.dtype, invariant, GatherGrid(tensor, strides, grid), grid, options);
}

StatusOr<Fingerprint> ComputeFingerprint(const TensorBuffer& tensor, const FingerprintOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(const int64_t count, CheckedCount(tensor));
  const std::vector<int64_t> strides = tensor.strides.empty() ? ContiguousStrides(tensor.shape) : tensor.strides;

  MomentAccumulator acc;
  if (count > 0) AccumulateMoments(tensor, CoalesceForTraversal(tensor.shape, strides), &acc);
  const SampleGrid grid = MakeSampleGrid(tensor.shape, std::max<int64_t>(options.exact_max_elements, 1));
  return AssembleFingerprint(tensor.dtype, acc, GatherGrid(tensor, strides, grid), grid, options);
}

}  // namespace magneton
