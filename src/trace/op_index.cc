#include "trace/op_index.h"

namespace magneton {

OpIndexOfId::OpIndexOfId(const Trace& trace) : op_total_(trace.ops.size()) {
  for (size_t i = 0; i < op_total_ && identity_; ++i) identity_ = trace.ops[i].id == static_cast<int64_t>(i);
  if (identity_) return;
  map_.reserve(op_total_);
  for (size_t i = 0; i < op_total_; ++i) map_.emplace(trace.ops[i].id, i);
}

}  // namespace magneton
