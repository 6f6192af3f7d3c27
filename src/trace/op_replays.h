// The op_replays table: per-call time and energy of ops re-executed by
// `magneton replay` (docs/ENERGY.md), appended to a closed trace file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/provenance.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

struct OpReplay {
  int64_t op_id = kNoId;
  std::string signature;
  int64_t occurrences = 0;
  std::string meter;  // "" when only time was measured
  Provenance provenance = Provenance::kEstimated;
  int64_t calls_per_round = 0;
  int64_t rounds = 0;
  double duration_ns_mean = 0, duration_ns_stddev = 0;
  double energy_uj_mean = 0, energy_uj_stddev = 0;  // NaN without a meter
  std::string error;  // why it could not be replayed
  std::string device = "cpu";  // where it was replayed ("cuda:0")
  // How the calls were issued: "loop", "cuda-graph", or "loop: <why no graph>".
  std::string method;
  // What the recording's attribution charged per occurrence, in the domains
  // the replay measured (NaN: not comparable, e.g. the trace has no samples there).
  double online_energy_uj = 0;
};

Status AppendOpReplays(const std::string& trace_path, const std::vector<OpReplay>& replays);
StatusOr<std::vector<OpReplay>> ReadOpReplays(const std::string& trace_path);

}  // namespace magneton
