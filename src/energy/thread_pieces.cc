#include "energy/thread_pieces.h"

#include <algorithm>

namespace magneton::energy {

bool StartsFirst(const Trace& trace, size_t a, size_t b) {
  const auto &x = trace.ops[a], &y = trace.ops[b];
  if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
  if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
  return a < b;
}

ThreadPieces::ThreadPieces(const Trace& trace, std::span<const size_t> ops_in_order,
                           const std::vector<bool>& recorder_op, Kind kind, int64_t window_start_ns,
                           int64_t window_end_ns, std::vector<int64_t>* parent)
    : trace_(trace),
      ops_(ops_in_order),
      recorder_op_(recorder_op),
      kind_(kind),
      window_start_ns_(window_start_ns),
      window_end_ns_(window_end_ns),
      parent_(parent) {}

bool ThreadPieces::Next(Piece* out) {
  while (ready_head_ == ready_.size()) {
    if (done_) return false;
    ready_.clear();
    ready_head_ = 0;
    Step();
  }
  *out = ready_[ready_head_++];
  return true;
}

void ThreadPieces::Emit(int64_t start_ns, int64_t end_ns, size_t op) {
  start_ns = std::clamp(start_ns, window_start_ns_, window_end_ns_);
  end_ns = std::clamp(end_ns, window_start_ns_, window_end_ns_);
  if (end_ns > start_ns) ready_.push_back({start_ns, end_ns, op});
}

void ThreadPieces::PopOpen() {
  const int64_t end = trace_.ops[stack_.back()].end_ns;
  if (kind_ == Kind::kExclusive && end > cursor_ns_) Emit(cursor_ns_, end, stack_.back());
  cursor_ns_ = std::max(cursor_ns_, end);
  stack_.pop_back();
}

void ThreadPieces::Step() {
  const bool exclusive = kind_ == Kind::kExclusive;
  if (next_op_ == ops_.size()) {
    while (!stack_.empty()) PopOpen();
    done_ = true;
    return;
  }
  const size_t i = ops_[next_op_++];
  const OpEvent& op = trace_.ops[i];
  while (!stack_.empty() && trace_.ops[stack_.back()].end_ns <= op.start_ns) PopOpen();
  if (!stack_.empty()) {
    if (exclusive && op.start_ns > cursor_ns_) Emit(cursor_ns_, op.start_ns, stack_.back());
    if (parent_ != nullptr) (*parent_)[i] = static_cast<int64_t>(stack_.back());
  } else {
    if (!exclusive && seen_top_level_ && op.start_ns > cursor_ns_) pending_gaps_.push_back({cursor_ns_, op.start_ns, i});
    if (!recorder_op_[i]) {
      if (!exclusive) {
        for (const Piece& g : pending_gaps_) Emit(g.start_ns, g.end_ns, i);
      }
      pending_gaps_.clear();
    }
    seen_top_level_ = true;
  }
  cursor_ns_ = std::max(cursor_ns_, op.start_ns);
  stack_.push_back(i);
}

}  // namespace magneton::energy
