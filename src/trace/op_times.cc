#include "trace/op_times.h"

#include <algorithm>
#include <unordered_map>

namespace magneton {

std::vector<int64_t> SelfTimesNs(const Trace& trace) {
  std::unordered_map<int64_t, size_t> index_of_id;
  index_of_id.reserve(trace.ops.size());
  for (size_t i = 0; i < trace.ops.size(); ++i) index_of_id[trace.ops[i].id] = i;
  std::vector<int64_t> self_ns(trace.ops.size());
  for (size_t i = 0; i < trace.ops.size(); ++i) self_ns[i] = trace.ops[i].end_ns - trace.ops[i].start_ns;
  for (const OpEvent& op : trace.ops) {
    if (op.parent_id == kNoId) continue;
    auto it = index_of_id.find(op.parent_id);
    if (it != index_of_id.end()) self_ns[it->second] -= op.end_ns - op.start_ns;
  }
  for (int64_t& s : self_ns) s = std::max<int64_t>(0, s);
  return self_ns;
}

}  // namespace magneton
