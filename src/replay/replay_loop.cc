#include "replay/replay_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace magneton::replay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Status Sync(const LoopHooks& hooks) { return hooks.synchronize ? hooks.synchronize() : Status::Ok(); }

}  // namespace

IssuerChoice ChooseIssuer(bool want_graph, const std::function<StatusOr<CallIssuer>()>& capture_graph,
                          CallIssuer plain) {
  if (!want_graph) return {std::move(plain), ""};
  if (!capture_graph) return {std::move(plain), "no graph capture for this device in this torch"};
  StatusOr<CallIssuer> graph = capture_graph();
  if (graph.ok()) return {std::move(graph).value(), ""};
  // Ops that synchronise, allocate on the host or change shape cannot be
  // captured; they are measured in a plain loop, which says so.
  return {std::move(plain), "graph capture failed: " + graph.status().message()};
}

std::vector<double> LoopResult::duration_ns_per_call() const {
  std::vector<double> out;
  for (const RoundResult& r : rounds) out.push_back(static_cast<double>(r.duration_ns) / r.calls);
  return out;
}

std::vector<double> LoopResult::energy_uj_per_call() const {
  std::vector<double> out;
  for (const RoundResult& r : rounds) {
    if (!std::isnan(r.energy_uj)) out.push_back(r.energy_uj / r.calls);
  }
  return out;
}

Spread MeanAndSpread(const std::vector<double>& v) {
  if (v.empty()) return {kNaN, kNaN};
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) : 0.0};
}

StatusOr<LoopResult> RunReplayLoop(const LoopHooks& hooks, const LoopOptions& options) {
  if (!hooks.issuer.issue) return InvalidArgument("replay loop: nothing to issue");
  if (options.rounds < 1) return InvalidArgument("replay loop: at least one round");
  Clock& clock = hooks.clock ? *hooks.clock : SystemClock();
  auto issue = [&](int64_t calls) -> StatusOr<int64_t> {
    MAGNETON_ASSIGN_OR_RETURN(int64_t issued, hooks.issuer.issue(calls));
    if (issued < 1) return Internal("replay loop: the issuer issued no call");
    return issued;
  };

  // Warm-up (lazy initialisation, caches), then the call time, doubling the
  // calls until the clock can see them, to size a batch.
  MAGNETON_RETURN_IF_ERROR(issue(1).status());
  MAGNETON_RETURN_IF_ERROR(Sync(hooks));
  int64_t calibration_calls = 0, calibration_ns = 0;
  for (int64_t n = 1;; n *= 2) {
    const int64_t t0 = clock.MonotonicNowNs();
    MAGNETON_ASSIGN_OR_RETURN(int64_t issued, issue(n));
    MAGNETON_RETURN_IF_ERROR(Sync(hooks));
    calibration_calls = issued;
    calibration_ns = clock.MonotonicNowNs() - t0;
    if (calibration_ns >= 1'000'000 || n >= options.max_calls_per_batch) break;
  }
  const double one_call_ns = std::max(1.0, static_cast<double>(calibration_ns) / calibration_calls);
  LoopResult result;
  result.calls_per_batch = std::clamp<int64_t>(static_cast<int64_t>(options.batch_ns / one_call_ns), 1,
                                               std::max<int64_t>(options.max_calls_per_batch, 1));

  for (int round = 0; round < options.rounds; ++round) {
    // Work still queued from before must not land in this round's window.
    MAGNETON_RETURN_IF_ERROR(Sync(hooks));
    double e0 = kNaN;
    if (hooks.read_energy_uj) {
      MAGNETON_ASSIGN_OR_RETURN(e0, hooks.read_energy_uj());
    }
    const int64_t t0 = clock.MonotonicNowNs();
    RoundResult r;
    while (true) {
      MAGNETON_ASSIGN_OR_RETURN(int64_t issued, issue(result.calls_per_batch));
      MAGNETON_RETURN_IF_ERROR(Sync(hooks));
      r.calls += issued;
      ++r.batches;
      r.duration_ns = clock.MonotonicNowNs() - t0;
      if (r.duration_ns < options.min_round_ns) continue;
      if (!hooks.read_energy_uj) {
        r.energy_uj = kNaN;
        break;
      }
      MAGNETON_ASSIGN_OR_RETURN(double e1, hooks.read_energy_uj());
      r.energy_uj = e1 - e0;
      if (r.energy_uj > 0 && r.energy_uj >= options.min_energy_uj) break;
      if (r.duration_ns >= options.max_round_ns) {
        return Unavailable(fmt::format("the energy counter moved {:.0f} µJ in {:.1f} s of calls (a round needs {}): "
                                       "a stale or stuck meter",
                                       r.energy_uj, r.duration_ns / 1e9,
                                       options.min_energy_uj > 0 ? fmt::format("{:.0f} µJ", options.min_energy_uj)
                                                                 : std::string("it to move")));
      }
    }
    result.rounds.push_back(r);
  }
  return result;
}

}  // namespace magneton::replay
