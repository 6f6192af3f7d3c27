// The recorded ops open on a thread at an instant, and which op encloses
// which: what a launch call is placed by when its source's host op is not
// one the recorder kept (gpu/link.h), and how captured ops are told from the
// capture that holds them (gpu/graph_link.h).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/op_spans.h"

namespace magneton::gpu {

class OpenOps {
 public:
  explicit OpenOps(const std::vector<OpSpan>& ops);
  // The index into ops of the innermost op open at time t on a thread, or -1.
  int64_t At(int64_t thread, int64_t t) const;
  // Whether op `i` is nested (at any depth) in op `ancestor` (indices into
  // ops); an op is not nested in itself.
  bool Descends(size_t i, size_t ancestor) const;
  // The index of op i's enclosing op, or -1.
  int64_t ParentIndex(size_t i) const;

 private:

  const std::vector<OpSpan>& ops_;
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, size_t>>> by_thread_;
  std::unordered_map<int64_t, size_t> index_of_;
};

}  // namespace magneton::gpu
