// Which recorded ops to replay: ops grouped by signature (op, arguments,
// input shapes/strides/dtypes/devices), ranked by the time they took.
#pragma once

#include <string>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"
#include "trace/op_replays.h"

namespace magneton::replay {

struct PlannedInput {
  int64_t slot = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::string dtype;
  std::string device;
};

struct PlannedOp {
  int64_t op_id = kNoId;           // a representative op
  std::string name;                // "aten::addmm"
  std::string args;                // recorded arguments, JSON (trace/op_args.h)
  std::vector<PlannedInput> inputs;
  int64_t occurrences = 0;         // ops in the trace with this signature
  std::vector<int64_t> op_ids;     // those ops (what the online attribution charged them is compared)
  int64_t self_ns_total = 0;       // their summed exclusive time
  std::string signature;          // "aten::addmm(%0, %1, %2, 1, 1) float32[32] ..."
};

// top > 0: the top ops by summed self time; op_ids non-empty: exactly these.
StatusOr<std::vector<PlannedOp>> PlanReplay(const Trace& trace, int top, const std::vector<int64_t>& op_ids);

// One replayed signature's result, as the op_replays table stores it.
using ReplayRecord = OpReplay;

std::string FormatReplayTable(const std::vector<ReplayRecord>& records);

}  // namespace magneton::replay
