// The measurement loop of `magneton replay` (docs/ENERGY.md, "Replay"),
// free of torch so that it is tested with a scripted clock and meter: an op
// is called in batches until a round has lasted long enough AND the energy
// counter has moved enough, with the device synchronised before every
// reading of time or energy; per-call time and energy are the round's
// totals over its calls, and the rounds give the spread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "magneton/status.h"

namespace magneton::replay {

struct LoopOptions {
  int64_t min_round_ns = 200'000'000;  // each round lasts at least this
  // ... and, with a meter, until its counter moved at least this much (and
  // at all): a counter that steps coarsely or updates late has then moved
  // many steps, so its quantisation is a small part of the reading.
  double min_energy_uj = 0;
  // A round still short of min_energy_uj by then fails: the counter is not
  // moving (a stale meter), and a per-call figure would be made up.
  int64_t max_round_ns = 60'000'000'000;
  int64_t batch_ns = 20'000'000;  // work issued between two polls
  int64_t max_calls_per_batch = 1'000'000;
  int rounds = 5;
};

// How the calls are issued: a plain loop, or launches of a captured graph of
// several calls. issue(n) issues about n calls (a graph: whole launches) and
// returns how many it issued; it may return before a device has run them.
struct CallIssuer {
  std::string method;  // "loop", "cuda-graph"
  std::function<StatusOr<int64_t>(int64_t calls)> issue;
};

// A graph where it is wanted and the op allows capture, else the plain loop;
// note says why no graph when one was wanted ("" otherwise).
struct IssuerChoice {
  CallIssuer issuer;
  std::string note;
};
IssuerChoice ChooseIssuer(bool want_graph, const std::function<StatusOr<CallIssuer>()>& capture_graph,
                          CallIssuer plain);

struct LoopHooks {
  CallIssuer issuer;
  std::function<Status()> synchronize;               // waits for the device; empty for host ops
  std::function<StatusOr<double>()> read_energy_uj;  // cumulative µJ; empty: time only
  Clock* clock = nullptr;                            // null: SystemClock()
};

struct RoundResult {
  int64_t calls = 0;
  int64_t duration_ns = 0;
  double energy_uj = 0;  // counter delta over the round (NaN without a meter)
  int batches = 0;
};

struct LoopResult {
  int64_t calls_per_batch = 0;
  std::vector<RoundResult> rounds;
  std::vector<double> duration_ns_per_call() const;
  std::vector<double> energy_uj_per_call() const;  // empty without a meter
};

StatusOr<LoopResult> RunReplayLoop(const LoopHooks& hooks, const LoopOptions& options);

// Mean and sample standard deviation (0 for one value; NaN for none).
struct Spread {
  double mean = 0;
  double stddev = 0;
};
Spread MeanAndSpread(const std::vector<double>& values);

}  // namespace magneton::replay
