// A vector of trivially copyable values that holds up to N of them in place
// (internal). A long run's 600 000 region pairs and their instances are mostly
// one op a side, one output: a std::vector each was 24 bytes and a 32-byte
// heap block for one value, ~330 MB of a 2.4 M-op diff (docs/PERFORMANCE.md,
// "At scale"). Beyond N it grows on the heap as a vector does. Reads as a
// contiguous range (std::span<const T> takes it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace magneton {

template <typename T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SmallVector copies its values as bytes");
  static_assert(N >= 1);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;
  using size_type = size_t;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  SmallVector(const std::vector<T>& values) { assign(values.data(), values.data() + values.size()); }  // NOLINT
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { Take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      Free();
      Take(other);
    }
    return *this;
  }
  ~SmallVector() { Free(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return on_heap() ? heap() : in_place(); }
  const T* data() const { return on_heap() ? heap() : in_place(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // value may live in this vector
      Grow(static_cast<size_t>(capacity_) * 2);
      data()[size_++] = copy;
      return;
    }
    data()[size_++] = value;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void clear() { size_ = 0; }
  template <typename It>
  void assign(It first, It last) {
    size_ = 0;
    reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) data()[size_++] = *first;
  }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const { return capacity_ > N; }
  void Grow(size_t n) {
    T* grown = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (grown == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(static_cast<void*>(grown), data(), size_ * sizeof(T));
    Free();
    set_heap(grown);
    capacity_ = static_cast<uint32_t>(n);
  }
  void Free() {
    if (on_heap()) std::free(heap());
    capacity_ = N;
  }
  // Leaves other empty and in place.
  void Take(SmallVector& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.on_heap()) {
      set_heap(other.heap());
    } else {
      std::memcpy(storage_, other.storage_, other.size_ * sizeof(T));  // only the values it holds
    }
    other.size_ = 0;
    other.capacity_ = N;
  }

  // The values in place, or (capacity_ > N) the pointer to them on the heap.
  T* in_place() { return reinterpret_cast<T*>(storage_); }
  const T* in_place() const { return reinterpret_cast<const T*>(storage_); }
  T* heap() const {
    T* p;
    std::memcpy(&p, storage_, sizeof p);
    return p;
  }
  void set_heap(T* p) { std::memcpy(storage_, &p, sizeof p); }

  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  alignas(T) alignas(T*) unsigned char storage_[std::max(N * sizeof(T), sizeof(T*))] = {};
};

}  // namespace magneton
