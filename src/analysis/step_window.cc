#include "analysis/step_window.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

namespace magneton::analysis {
namespace {

constexpr char kStepOp[] = "magneton::step";

}  // namespace

int64_t RecordedSteps(const Trace& trace) {
  int64_t n = 0;
  for (const OpEvent& op : trace.ops) n += trace.str(op.name_id) == kStepOp;
  return n;
}

size_t KeepRecordedSteps(Trace& trace, FingerprintMap& fingerprints, int64_t steps) {
  int64_t seen = 0;
  size_t keep = trace.ops.size();
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    if (trace.str(trace.ops[i].name_id) != kStepOp) continue;
    if (++seen == steps) {
      keep = i + 1;
      break;
    }
  }
  if (steps <= 0) keep = 0;
  if (keep >= trace.ops.size()) return 0;
  // Ops are sorted by id; every op after the cut has a larger id than any kept.
  const int64_t first_gone = trace.ops[keep].id;
  const size_t dropped = trace.ops.size() - keep;
  trace.ops.resize(keep);
  auto gone = [&](int64_t op_id) { return op_id != kNoId && op_id >= first_gone; };
  std::erase_if(trace.op_tensors, [&](const OpTensor& l) { return gone(l.op_id); });
  std::unordered_set<int64_t> linked;
  for (const OpTensor& l : trace.op_tensors) linked.insert(l.tensor_id);
  for (TensorMeta& t : trace.tensors) {
    if (gone(t.producer_op_id)) t.producer_op_id = kNoId;
  }
  fingerprints.KeepIf([&](int64_t tensor_id) { return linked.contains(tensor_id); });
  return dropped;
}

std::string EqualizeSteps(Trace& a, FingerprintMap& fa, Trace& b, FingerprintMap& fb) {
  // Only windows: a whole run's steps are its work (a run with 4 optimizer
  // steps per batch against one with 1 does more steps, which is the finding).
  auto windowed = [](const Trace& t) {
    auto it = t.meta.extra.find("window.configured");
    return it != t.meta.extra.end() && it->second == "1";
  };
  if (!windowed(a) || !windowed(b)) return "";
  const int64_t steps_a = RecordedSteps(a), steps_b = RecordedSteps(b);
  if (steps_a == 0 || steps_b == 0 || steps_a == steps_b) return "";
  const bool trim_a = steps_a > steps_b;
  const int64_t steps = std::min(steps_a, steps_b);
  const size_t dropped = trim_a ? KeepRecordedSteps(a, fa, steps) : KeepRecordedSteps(b, fb, steps);
  return fmt::format("A's recording holds {} recorded steps and B's {}: compared the first {} of each ({} ops of {} "
                     "after them left out)",
                     steps_a, steps_b, steps, dropped, trim_a ? 'A' : 'B');
}

}  // namespace magneton::analysis
