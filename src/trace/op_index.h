// An op's index in trace.ops from its id. A trace read from a file has ids
// 0 .. ops - 1 in order (trace_reader.cc checks it): then the id is the index
// and no map is made; only a Trace built otherwise (in memory, by a test or
// an ingest) gets a hash map of every op (~48 bytes an op, 110 MB for the two
// sides of a 2.4 M-op diff). With duplicated ids (a reader refuses them; an
// edited Trace may hold them) the first op of an id is the one found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "magneton/trace.h"

namespace magneton {

class OpIndexOfId {
 public:
  explicit OpIndexOfId(const Trace& trace);
  // The index, or -1 when no op has this id.
  int64_t Find(int64_t op_id) const {
    if (identity_) return op_id >= 0 && static_cast<size_t>(op_id) < op_total_ ? op_id : -1;
    auto it = map_.find(op_id);
    return it == map_.end() ? -1 : static_cast<int64_t>(it->second);
  }

 private:
  size_t op_total_;
  bool identity_ = true;
  std::unordered_map<int64_t, size_t> map_;
};

}  // namespace magneton
