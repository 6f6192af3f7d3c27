#include "torch_hook/replay_trace.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/Device.h>

#include <cmath>
#include <numeric>

#include "magneton/trace_reader.h"
#include "torch_hook/replay.h"
#include "torch_hook/replay_energy.h"

namespace magneton::replay {
namespace {

void MeanStddev(const std::vector<double>& v, double* mean, double* stddev) {
  if (v.empty()) {
    *mean = *stddev = std::nan("");
    return;
  }
  *mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - *mean) * (x - *mean);
  *stddev = v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) : 0.0;
}

}  // namespace

StatusOr<std::vector<ReplayRecord>> ReplayTrace(const std::string& path, const ReplayTraceOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
  MAGNETON_ASSIGN_OR_RETURN(std::vector<PlannedOp> plan, PlanReplay(trace, options.top, options.op_ids));
  EnergyReader energy = OpenReplayEnergyReader();

  std::vector<ReplayRecord> records;
  for (const PlannedOp& p : plan) {
    ReplayRecord r;
    r.op_id = p.op_id;
    r.signature = p.signature;
    r.occurrences = p.occurrences;
    r.rounds = options.rounds;
    OpSpec spec{p.name, p.args, {}};
    for (const PlannedInput& in : p.inputs) spec.inputs.push_back({in.slot, in.shape, in.strides, in.dtype, in.device});
    ReplayOptions ro;
    // GPU ops run asynchronously: a round ends when the device is done.
    for (const PlannedInput& in : p.inputs) {
      if (in.device.rfind("cuda", 0) == 0) {
        c10::DeviceIndex index = c10::Device(in.device).index();
        ro.synchronize = [index] { at::detail::getCUDAHooks().deviceSynchronize(index < 0 ? 0 : index); };
        break;
      }
    }
    ro.min_round_ns = static_cast<int64_t>(options.min_round_s * 1e9);
    ro.rounds = options.rounds;
    if (energy.read_total_uj) {
      ro.read_energy_uj = energy.read_total_uj;
      r.meter = energy.meter_name;
      r.provenance = energy.provenance;
    }
    auto result = ReplayOp(spec, ro);
    if (!result.ok()) {
      r.error = result.status().message();
      r.duration_ns_mean = r.duration_ns_stddev = r.energy_uj_mean = r.energy_uj_stddev = std::nan("");
    } else {
      r.calls_per_round = result->calls_per_round;
      MeanStddev(result->duration_ns_per_call, &r.duration_ns_mean, &r.duration_ns_stddev);
      MeanStddev(result->energy_uj_per_call, &r.energy_uj_mean, &r.energy_uj_stddev);
    }
    records.push_back(std::move(r));
  }
  if (options.store) MAGNETON_RETURN_IF_ERROR(AppendOpReplays(path, records));
  return records;
}

}  // namespace magneton::replay
