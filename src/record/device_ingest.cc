#include "record/device_ingest.h"

#include <cstdlib>

#include "trace/op_spans.h"

namespace magneton {
namespace {

void WriteStats(Recorder& rec, const gpu::LinkStats& st) {
  auto set = [&](const std::string& key, int64_t v) { rec.SetMeta("gpu." + key, std::to_string(v)); };
  rec.SetMeta("gpu.source", st.source);
  set("activities", static_cast<int64_t>(st.activities));
  set("linked_by_host_op", static_cast<int64_t>(st.by_host_op));
  set("linked_by_launch_time", static_cast<int64_t>(st.by_launch_time));
  set("unlinked", static_cast<int64_t>(st.unlinked));
  set("unlinked_no_launch", static_cast<int64_t>(st.no_launch));
  set("unlinked_launch_outside_ops", static_cast<int64_t>(st.launch_outside_ops));
  int64_t dropped = 0;
  for (const auto& [why, n] : st.dropped) {
    set("dropped." + why, n);
    dropped += n;
  }
  set("dropped", dropped);
  // CUDA graphs (docs/TRACE_FORMAT.md "CUDA graphs"): written only where a
  // graph ran or a capture was recorded, so a trace without any says nothing.
  const gpu::GraphLinkStats& g = st.graphs;
  if (g.graph_activities != 0 || g.captures != 0) {
    set("graph.launches", static_cast<int64_t>(g.graph_launches));
    set("graph.activities", static_cast<int64_t>(g.graph_activities));
    set("graph.captures", static_cast<int64_t>(g.captures));
    set("graph.captured_ops", static_cast<int64_t>(g.captured_ops));
    set("graph.captured_launches", static_cast<int64_t>(g.captured_launches));
    set("graph.replays_matched", static_cast<int64_t>(g.replays_matched));
    set("graph.replays_unmatched", static_cast<int64_t>(g.replays_unmatched));
    set("graph.linked_to_captured_op", static_cast<int64_t>(g.linked_to_captured_op));
  }
  if (st.clock.method.empty()) return;  // no activity to place and no clock found
  rec.SetMeta("gpu.clock_method", st.clock.method);
  if (!st.clock.prior_used.empty()) rec.SetMeta("gpu.clock_prior", st.clock.prior_used);
  set("clock_offset_ns", st.clock.offset_ns);
  set("clock_error_ns", st.clock.error_ns);
  set("clock_host_ops", static_cast<int64_t>(st.clock.host_ops));
  set("clock_paired", static_cast<int64_t>(st.clock.paired));
  set("clock_residual_p50_ns", st.clock.residual_p50_ns);
  set("clock_residual_p95_ns", st.clock.residual_p95_ns);
  set("clock_residual_max_ns", st.clock.residual_max_ns);
}

}  // namespace

std::vector<gpu::ClockPrior> PriorsFrom(const DeviceClockBracket& bracket) {
  std::vector<gpu::ClockPrior> out;
  if (bracket.known) {
    const int64_t a = bracket.start.realtime_minus_monotonic_ns, b = bracket.stop.realtime_minus_monotonic_ns;
    out.push_back({"realtime_bracket", a + (b - a) / 2,
                   std::max(bracket.start.uncertainty_ns, bracket.stop.uncertainty_ns) + std::llabs(b - a) / 2});
  }
  out.push_back({"monotonic", 0, 0});
  return out;
}

StatusOr<gpu::LinkStats> IngestDeviceActivities(Recorder& rec, gpu::ActivitySource& source,
                                                const DeviceClockBracket& bracket) {
  auto fail = [&](const Status& st) {
    rec.SetMeta("gpu.error", std::string(source.name()) + ": " + st.message());
    return st;
  };
  // Linking reads the ops back from the file: every op recorded so far must
  // be committed first.
  Status flushed = rec.Flush();
  if (!flushed.ok()) return fail(flushed);
  auto batch = source.Collect();
  if (!batch.ok()) return fail(batch.status());
  auto ops = ReadOpSpans(rec.writer()->path());
  if (!ops.ok()) return fail(ops.status());
  gpu::AlignOptions options;
  options.priors = PriorsFrom(bracket);
  auto linked = gpu::LinkActivities(*batch, *ops, options);
  if (!linked.ok()) return fail(linked.status());
  for (gpu::LinkedActivity& a : linked->activities) {
    a.row.name_id = rec.InternString(a.name);
    rec.writer()->AppendDeviceActivity(std::move(a.row));
  }
  for (const auto& [device, name] : batch->device_names) rec.SetMeta("gpu.device." + device + ".name", name);
  WriteStats(rec, linked->stats);
  return linked->stats;
}

}  // namespace magneton
