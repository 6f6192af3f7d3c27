#include "torch_hook/replay_trace.h"

#include <algorithm>
#include <cmath>

#include "magneton/trace_reader.h"
#include "replay/replay_compare.h"
#include "replay/replay_policy.h"
#include "replay/replay_target.h"
#include "torch_hook/replay.h"
#include "torch_hook/replay_energy.h"
#include "trust/trace_trust.h"

namespace magneton::replay {

StatusOr<std::vector<ReplayRecord>> ReplayTrace(const std::string& path, const ReplayTraceOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
  const trust::RerunAuthority authority = trust::VerifyRerunAuthority(trace);
  if (!authority.trusted && !options.allow_untrusted) {
    return FailedPrecondition("will not replay " + path + ": " + authority.reason +
                              "; replay runs the ops a trace names, so it replays only this user's own recordings "
                              "(pass --allow-untrusted to replay it anyway; only side-effect-free ATen ops run)");
  }
  MAGNETON_ASSIGN_OR_RETURN(std::vector<PlannedOp> plan, PlanReplay(trace, options.top, options.op_ids));
  const ReplayMeters meters;
  const double nan = std::nan("");

  std::vector<ReplayRecord> records;
  for (const PlannedOp& p : plan) {
    ReplayRecord r;
    r.op_id = p.op_id;
    r.signature = p.signature;
    r.occurrences = p.occurrences;
    r.rounds = options.rounds;
    r.duration_ns_mean = r.duration_ns_stddev = r.energy_uj_mean = r.energy_uj_stddev = nan;
    r.online_energy_uj = nan;
    auto target = SelectReplayTarget(p);
    if (!target.ok()) {
      r.error = target.status().message();
      records.push_back(std::move(r));
      continue;
    }
    r.device = target->device;
    OpSpec spec{p.name, p.args, {}};
    for (const PlannedInput& in : p.inputs) spec.inputs.push_back({in.slot, in.shape, in.strides, in.dtype, in.device});
    ReplayOptions ro;
    ro.target = *target;
    const double round_s = options.min_round_s > 0 ? options.min_round_s
                                                   : (target->on_device ? kDeviceMinRoundS : kHostMinRoundS);
    ro.loop.min_round_ns = static_cast<int64_t>(round_s * 1e9);
    ro.loop.max_round_ns = std::max<int64_t>(ro.loop.min_round_ns * 10, 30'000'000'000);
    ro.loop.rounds = options.rounds;
    const EnergyReader energy = meters.ReaderFor(target->device_domain);
    if (energy.read_total_uj) {
      ro.read_energy_uj = energy.read_total_uj;
      ro.loop.min_energy_uj = MinEnergyDeltaUj(energy.meter_name);
      r.meter = energy.meter_name;
      r.provenance = energy.provenance;
    }
    // The name alone can refuse an op before anything about it is looked up.
    if (Status name_ok = CheckReplayOpName(p.name); !name_ok.ok()) {
      r.error = name_ok.message();
      records.push_back(std::move(r));
      continue;
    }
    auto result = ReplayOp(spec, ro);
    if (!result.ok()) {
      r.error = result.status().message();
      records.push_back(std::move(r));
      continue;
    }
    r.method = result->method;
    r.calls_per_round = result->loop.rounds.empty() ? 0 : result->loop.rounds.front().calls;
    const Spread duration = MeanAndSpread(result->loop.duration_ns_per_call());
    r.duration_ns_mean = duration.mean;
    r.duration_ns_stddev = duration.stddev;
    const Spread energy_per_call = MeanAndSpread(result->loop.energy_uj_per_call());
    r.energy_uj_mean = energy_per_call.mean;
    r.energy_uj_stddev = energy_per_call.stddev;
    if (energy.read_total_uj) {
      // What the recording charged the same ops, in the same domains.
      auto online = OnlineEnergyPerCall(trace, p.op_ids, energy.domains);
      if (online.ok()) r.online_energy_uj = online->uj_per_call;
    }
    records.push_back(std::move(r));
  }
  if (options.store) MAGNETON_RETURN_IF_ERROR(AppendOpReplays(path, records));
  return records;
}

}  // namespace magneton::replay
