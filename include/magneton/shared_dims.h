// A tensor's sizes or strides as a trace holds them: immutable and shared.
// A long run's 600 000 tensors have about a dozen distinct layouts, and a
// vector each (with its heap block) was a third of the tensors' memory; the
// reader gives every tensor of a layout the same one (docs/PERFORMANCE.md,
// "At scale"). Reads as a const std::vector<int64_t>; assigning replaces
// the whole, as for a vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace magneton {

class SharedDims {
 public:
  SharedDims() = default;
  // Implicit, so that `meta.shape = sizes;` and `{2, 3}` read as for a vector.
  SharedDims(std::vector<int64_t> dims)  // NOLINT(google-explicit-constructor)
      : dims_(dims.empty() ? nullptr : std::make_shared<const std::vector<int64_t>>(std::move(dims))) {}
  SharedDims(std::initializer_list<int64_t> dims) : SharedDims(std::vector<int64_t>(dims)) {}
  template <typename It>
  SharedDims(It first, It last) : SharedDims(std::vector<int64_t>(first, last)) {}

  const std::vector<int64_t>& vec() const { return dims_ ? *dims_ : Empty(); }
  operator const std::vector<int64_t>&() const { return vec(); }  // NOLINT(google-explicit-constructor)

  size_t size() const { return vec().size(); }
  bool empty() const { return dims_ == nullptr; }
  int64_t operator[](size_t i) const { return (*dims_)[i]; }
  int64_t front() const { return dims_->front(); }
  int64_t back() const { return dims_->back(); }
  const int64_t* data() const { return vec().data(); }
  std::vector<int64_t>::const_iterator begin() const { return vec().begin(); }
  std::vector<int64_t>::const_iterator end() const { return vec().end(); }

  friend bool operator==(const SharedDims& a, const SharedDims& b) { return a.dims_ == b.dims_ || a.vec() == b.vec(); }
  friend bool operator==(const SharedDims& a, const std::vector<int64_t>& b) { return a.vec() == b; }

 private:
  static const std::vector<int64_t>& Empty() {
    static const std::vector<int64_t> kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::vector<int64_t>> dims_;  // null when empty
};

}  // namespace magneton
