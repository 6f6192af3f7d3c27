// Per-node lists of a graph (its edges in and out, the tensors a node made or
// read) held as two arrays, compressed rows: a node's list is a span of one
// values array. A vector per node per list cost four heap blocks per op for a
// dataflow graph, ~150 bytes an op at 40 bytes a list, and both graphs of a
// diff are alive while the matcher runs (docs/PERFORMANCE.md, "At scale").
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace magneton {

template <typename T>
class NodeLists {
 public:
  NodeLists() = default;

  // Groups items [0, count) by node, each node's values in item order:
  // node_of(i) is the item's node in [0, nodes) or negative (left out),
  // value_of(i) its value. False when there are too many values for the
  // 32-bit starts (more than 4 G).
  template <typename NodeOf, typename ValueOf>
  bool Group(size_t nodes, size_t count, NodeOf node_of, ValueOf value_of) {
    starts_.assign(nodes + 1, 0);
    for (size_t i = 0; i < count; ++i) {
      const int64_t v = node_of(i);
      if (v >= 0) ++starts_[static_cast<size_t>(v) + 1];
    }
    uint64_t total = 0;
    for (size_t v = 1; v <= nodes; ++v) {
      total += starts_[v];
      if (total > std::numeric_limits<uint32_t>::max()) return false;
      starts_[v] = static_cast<uint32_t>(total);
    }
    values_.resize(total);
    std::vector<uint32_t> next(starts_.begin(), starts_.end() - 1);
    for (size_t i = 0; i < count; ++i) {
      const int64_t v = node_of(i);
      if (v >= 0) values_[next[static_cast<size_t>(v)]++] = value_of(i);
    }
    return true;
  }

  // Or node by node, in node order: Push a node's values, then EndNode.
  void Push(T value) { values_.push_back(value); }
  void EndNode() {
    if (starts_.empty()) starts_.push_back(0);
    starts_.push_back(static_cast<uint32_t>(values_.size()));
  }

  std::span<const T> operator[](size_t node) const {
    return {values_.data() + starts_[node], values_.data() + starts_[node + 1]};
  }
  size_t size() const { return starts_.empty() ? 0 : starts_.size() - 1; }
  size_t value_count() const { return values_.size(); }

 private:
  std::vector<uint32_t> starts_;  // node v's values are [starts_[v], starts_[v + 1])
  std::vector<T> values_;
};

}  // namespace magneton
