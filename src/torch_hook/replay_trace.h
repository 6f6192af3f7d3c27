// `magneton replay`: plan, replay and store per-op figures for one trace.
#pragma once

#include <string>
#include <vector>

#include "magneton/status.h"
#include "replay/replay_plan.h"

namespace magneton::replay {

struct ReplayTraceOptions {
  int top = 10;
  std::vector<int64_t> op_ids;
  double min_round_s = 0.2;
  int rounds = 5;
  bool store = true;  // write results into the trace's op_replays table
};

StatusOr<std::vector<ReplayRecord>> ReplayTrace(const std::string& path, const ReplayTraceOptions& options);

}  // namespace magneton::replay
