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
  // Round length; <= 0: kHostMinRoundS for host ops, kDeviceMinRoundS for
  // GPU ops (replay/replay_target.h).
  double min_round_s = 0;
  int rounds = 5;
  bool store = true;  // write results into the trace's op_replays table
  // Replay a trace that does not verify (trust/trace_trust.h: not signed by
  // this user's key on this host): only when the user says so. Even then only
  // the ops replay_policy.h allows run.
  bool allow_untrusted = false;
};

// FailedPrecondition, naming the reason and --allow-untrusted, for a trace
// that does not verify unless options.allow_untrusted.
StatusOr<std::vector<ReplayRecord>> ReplayTrace(const std::string& path, const ReplayTraceOptions& options);

}  // namespace magneton::replay
