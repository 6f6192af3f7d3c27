// Tensor id -> where the tensor comes from, for every tensor a dataflow graph
// touches. A reader's tensor ids are 0..n-1 (trace_reader.cc checks it), so
// the origins are a byte per tensor of the trace, indexed by id: a hash node
// per tensor was 12 MB of the graph stage on a 320 000-op trace
// (docs/PERFORMANCE.md, "At scale"). An id beyond the trace's tensors
// (a Trace built by hand) goes to a side map, so no id is ever lost.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace magneton {

// Where a never-produced tensor comes from (a heuristic; docs/MATCHING.md).
enum class TensorOrigin : uint8_t {
  kProduced = 0,    // an op in the trace wrote it
  kModelInput = 1,  // never produced; looks like data fed to the model
  kParameter = 2,   // never produced; looks like a weight, bias or constant
};

class TensorOrigins {
 public:
  // Empty, with room by id for a trace of `tensor_count` tensors.
  void Reset(size_t tensor_count) {
    dense_.assign(tensor_count, kNone);
    sparse_.clear();
    size_ = 0;
  }

  std::optional<TensorOrigin> find(int64_t id) const {
    if (InDense(id)) {
      const uint8_t v = dense_[static_cast<size_t>(id)];
      return v == kNone ? std::nullopt : std::optional<TensorOrigin>(static_cast<TensorOrigin>(v));
    }
    auto it = sparse_.find(id);
    return it == sparse_.end() ? std::nullopt : std::optional<TensorOrigin>(it->second);
  }
  bool contains(int64_t id) const { return find(id).has_value(); }
  // As std::map::at: an id the graph never touched is a caller's bug.
  TensorOrigin at(int64_t id) const {
    const std::optional<TensorOrigin> o = find(id);
    if (!o) throw std::out_of_range("TensorOrigins::at: tensor id not in the graph");
    return *o;
  }
  size_t size() const { return size_; }

  // Sets id's origin if it has none yet; returns whether it did (map::emplace).
  bool emplace(int64_t id, TensorOrigin origin) {
    if (contains(id)) return false;
    Set(id, origin);
    ++size_;
    return true;
  }
  // Overwrites the origin of an id that has one.
  void assign(int64_t id, TensorOrigin origin) {
    if (contains(id)) Set(id, origin);
  }

  // f(id, origin) for every id that has one: by id for the trace's tensors,
  // then the side map's.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i < dense_.size(); ++i) {
      if (dense_[i] != kNone) f(static_cast<int64_t>(i), static_cast<TensorOrigin>(dense_[i]));
    }
    for (const auto& [id, origin] : sparse_) f(id, origin);
  }

 private:
  static constexpr uint8_t kNone = 0xFF;
  bool InDense(int64_t id) const { return id >= 0 && static_cast<size_t>(id) < dense_.size(); }
  void Set(int64_t id, TensorOrigin origin) {
    if (InDense(id)) {
      dense_[static_cast<size_t>(id)] = static_cast<uint8_t>(origin);
    } else {
      sparse_[id] = origin;
    }
  }

  std::vector<uint8_t> dense_;
  std::unordered_map<int64_t, TensorOrigin> sparse_;
  size_t size_ = 0;
};

}  // namespace magneton
