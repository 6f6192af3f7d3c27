#include "trace/op_times.h"

#include <algorithm>

#include "trace/op_index.h"

namespace magneton {

std::vector<int64_t> SelfTimesNs(const Trace& trace) {
  const OpIndexOfId index_of_id(trace);
  std::vector<int64_t> self_ns(trace.ops.size());
  for (size_t i = 0; i < trace.ops.size(); ++i) self_ns[i] = trace.ops[i].end_ns - trace.ops[i].start_ns;
  for (const OpEvent& op : trace.ops) {
    if (op.parent_id == kNoId) continue;
    const int64_t parent = index_of_id.Find(op.parent_id);
    if (parent >= 0) self_ns[static_cast<size_t>(parent)] -= op.end_ns - op.start_ns;
  }
  for (int64_t& s : self_ns) s = std::max<int64_t>(0, s);
  return self_ns;
}

}  // namespace magneton
