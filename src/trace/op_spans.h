// The ops of a trace as intervals on their threads, read straight from the
// file: what device activities are linked to (gpu/link.h). A recording still
// being written can be read this way once its writer has flushed (SQLite's
// WAL lets this second connection read what is committed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

struct OpSpan {
  int64_t op_id = kNoId;
  std::string name;  // "aten::mm"
  int64_t thread_id = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC
  int64_t end_ns = 0;
  int64_t parent_id = kNoId;
  int64_t scope_id = kNoId;
  int64_t call_path_id = kNoId;
  uint64_t correlation_id = 0;
  int64_t state_id = kNoId;  // its runtime state (kNoId: none, or a trace from before states)
  // The op's args (ops.args), kept only for the ops the recorder writes
  // around CUDA graphs (KeepsLinkArgs: "magneton::cuda_graph_capture" and
  // "cuda_graph::replay" name their graph there); "" for every other op,
  // whose arguments linking never reads.
  std::string recorder_args;
};

// The recorder's own ops (IsRecorderOp) and "cuda_graph::…" ops.
inline bool KeepsLinkArgs(const std::string& name) {
  return IsRecorderOp(name) || name.rfind("cuda_graph::", 0) == 0;
}

// Every op of the trace file at `path`, by id.
StatusOr<std::vector<OpSpan>> ReadOpSpans(const std::string& path);

}  // namespace magneton
