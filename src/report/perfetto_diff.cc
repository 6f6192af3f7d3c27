#include "report/perfetto_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/format.h"
#include "report/trace_events.h"

namespace magneton::report {
namespace {

using nlohmann::json;

constexpr size_t kMaxOpNamesInArgs = 32;  // a region's op list in its args; the count says how many there are

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// One run of the diff as a process of the document.
struct SideTrack {
  char letter;
  int64_t pid;
  const Trace* trace;
  std::string path;
  int64_t job_start_ns = 0;
  int64_t origin_ns = 0;  // ts 0 of this side
};

// One matched region instance as a slice on a side's regions track.
struct RegionSlice {
  int64_t start_ns = 0, end_ns = 0;
  std::string name;
  json args;
  size_t pair = 0;     // index of the instance pair, shared by its two slices
  int64_t tid = 0;     // assigned lane's track
};

std::string ProcessLabel(const SideTrack& s) {
  const Trace& t = *s.trace;
  std::string what = t.meta.label.empty() ? s.path : t.meta.label;
  std::string command = t.meta.command_line;
  command = ClipUtf8(command, 160, "...");
  if (!command.empty() && command != what) what += " (" + command + ")";
  return std::string(1, s.letter) + ": " + what;
}

// The slice title: "#1 waste: transformer.h.{0..1}.attn (GPT2Attention)", the
// region's name as the diff report gives it (diagnose/region_name.h); the
// rank is the finding's in the diff report.
std::string RegionTitle(size_t rank, const DiffReportInput& in, const detect::Finding& f) {
  return "#" + std::to_string(rank) + " " + detect::VerdictName(f.verdict) + ": " + RegionNameOf(in, f).text;
}

json OpNames(const std::vector<std::string>& names) {
  json out = json::array();
  for (size_t i = 0; i < names.size() && i < kMaxOpNamesInArgs; ++i) out.push_back(names[i]);
  return out;
}

json RatioInterval(const detect::Finding& f, double confidence) {
  const detect::Uncertainty& u = f.uncertainty;
  if (!u.ratio.known) return nullptr;
  return {{"low", Number(u.ratio.low)}, {"high", Number(u.ratio.high)}, {"confidence", confidence},
          {"method", u.method},         {"unit", u.unit},               {"units", u.units},
          {"runs", u.runs}};
}

// What a region slice carries on either side: the finding's verdict and
// figures, and this instance's.
json RegionArgs(const DiffReportInput& in, size_t index, size_t instance, char side) {
  const detect::DetectResult& r = *in.result;
  const detect::Finding& f = r.findings[index];
  const detect::RegionInstance& inst = f.instances[instance];
  const diagnose::Diagnosis* d = DiagnosisFor(in, index);
  json args = {
      {"side", std::string(1, side)},
      {"rank", index + 1},
      {"verdict", detect::VerdictName(f.verdict)},
      {"point_verdict", detect::VerdictName(f.point_verdict)},
      {"instance", instance + 1},
      {"instances", f.instances.size()},
      {"energy_domain", r.domain},
      {"energy_provenance", ProvenanceName(r.provenance)},
      {"energy_a_uj", inst.a.energy_uj},
      {"energy_b_uj", inst.b.energy_uj},
      {"time_a_ns", inst.a.time_ns},
      {"time_b_ns", inst.b.time_ns},
      {"instance_energy_ratio", inst.b.energy_uj > 0 ? Number(inst.a.energy_uj / inst.b.energy_uj) : json(nullptr)},
      {"finding_energy_a_uj", f.a.energy_uj},
      {"finding_energy_b_uj", f.b.energy_uj},
      {"energy_ratio", Number(f.energy_ratio)},
      {"energy_ratio_interval", RatioInterval(f, r.options.confidence)},
      {"uncertainty_note", f.uncertainty_note},
      {"costlier_side", f.wasteful_side ? std::string(1, f.wasteful_side) : std::string()},
      {"saving_uj", f.saving_uj},
      {"share_of_total", f.share_of_total},
      {"outputs_agree", f.outputs_agree},
      {"outputs_note", f.outputs_note},
      {"same_work", f.same_work},
      {"ops_a_count", f.names_a.size()},
      {"ops_b_count", f.names_b.size()},
      {"ops_a", OpNames(f.names_a)},
      {"ops_b", OpNames(f.names_b)},
      {"root_cause", RootCauseJson(d)},
  };
  if (d) args["diagnosis"] = d->sentence;
  return args;
}

// Trace-event slices on one track must nest; region instances of different
// findings can overlap in part (regions span threads). Each slice goes to the
// first lane whose last slice ended before it starts; a lane is one track.
size_t AssignLanes(std::vector<RegionSlice>& slices, int64_t first_tid) {
  std::vector<size_t> order(slices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return slices[x].start_ns != slices[y].start_ns ? slices[x].start_ns < slices[y].start_ns
                                                    : slices[x].end_ns > slices[y].end_ns;
  });
  std::vector<int64_t> lane_end;
  for (size_t i : order) {
    size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > slices[i].start_ns) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = slices[i].end_ns;
    slices[i].tid = first_tid + static_cast<int64_t>(lane);
  }
  return lane_end.size();
}

json SideMeta(const SideTrack& s, int64_t lead_ns) {
  return {{"pid", s.pid},
          {"path", s.path},
          {"label", s.trace->meta.label},
          {"command_line", s.trace->meta.command_line},
          {"host", s.trace->meta.host},
          {"job_start_monotonic_ns", s.job_start_ns},
          {"job_start_ts_us", TraceEventUs(s.job_start_ns, s.job_start_ns - lead_ns)}};
}

}  // namespace

int64_t JobStartNs(const Trace& trace) {
  bool any = false;
  int64_t start = trace.meta.start_monotonic_ns;
  for (const OpEvent& op : trace.ops) {
    if (IsRecorderOp(trace, op)) continue;
    start = any ? std::min(start, op.start_ns) : op.start_ns;
    any = true;
  }
  return start;
}

Status WritePerfettoDiff(const DiffReportInput& in, std::ostream& out) {
  if (!in.a || !in.b || !in.result) return FailedPrecondition("the Perfetto diff needs both traces and their diff");
  const detect::DetectResult& r = *in.result;
  std::vector<SideTrack> sides = {{'A', 1, in.a, in.path_a}, {'B', 2, in.b, in.path_b}};
  // One time axis: each run's job start at the same instant, `lead_ns` after
  // ts 0 so that neither run's start-up gets a negative timestamp.
  int64_t lead_ns = 0;
  for (SideTrack& s : sides) {
    s.job_start_ns = JobStartNs(*s.trace);
    lead_ns = std::max(lead_ns, s.job_start_ns - EarliestEventNs(*s.trace, s.job_start_ns));
  }
  for (SideTrack& s : sides) s.origin_ns = s.job_start_ns - lead_ns;

  json events = json::array();
  std::map<char, int64_t> max_tid;
  json counters = json::object();
  for (const SideTrack& s : sides) {
    AppendProcessName(s.pid, ProcessLabel(s), s.pid, events);
    max_tid[s.letter] = AppendOpSlices(*s.trace, s.pid, s.origin_ns, events);
    counters[std::string(1, s.letter)] = AppendEnergyCounters(*s.trace, s.pid, s.origin_ns, events);
  }

  // The matched regions, one slice per instance on each side.
  std::vector<RegionSlice> slices_a, slices_b;
  std::map<std::string, size_t> not_drawn;  // finding kind -> count
  size_t instances_without_ops = 0, pairs = 0;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const detect::Finding& f = r.findings[i];
    if (f.kind != detect::RegionKind::kMatched) {
      // Energy outside ops and unmatched ops are spread over the whole run:
      // no one span to draw (the diff report lists them).
      ++not_drawn[detect::RegionKindName(f.kind)];
      continue;
    }
    for (size_t k = 0; k < f.instances.size(); ++k) {
      const detect::RegionInstance& inst = f.instances[k];
      RegionSlice a, b;
      if (!OpsExtent(*in.a, inst.ops_a, &a.start_ns, &a.end_ns) || !OpsExtent(*in.b, inst.ops_b, &b.start_ns, &b.end_ns)) {
        ++instances_without_ops;
        continue;
      }
      a.name = b.name = RegionTitle(i + 1, in, f);
      a.args = RegionArgs(in, i, k, 'A');
      b.args = RegionArgs(in, i, k, 'B');
      a.pair = b.pair = pairs++;
      slices_a.push_back(std::move(a));
      slices_b.push_back(std::move(b));
    }
  }
  std::vector<std::vector<RegionSlice>*> side_slices = {&slices_a, &slices_b};
  size_t lanes_total = 0;
  for (size_t s = 0; s < sides.size(); ++s) {
    // Region tracks sit past every thread id of the run, so they never share one.
    const int64_t first_tid = max_tid[sides[s].letter] + 1;
    const size_t lanes = AssignLanes(*side_slices[s], first_tid);
    lanes_total += lanes;
    for (size_t lane = 0; lane < lanes; ++lane) {
      const int64_t tid = first_tid + static_cast<int64_t>(lane);
      AppendThreadName(sides[s].pid, tid, lane == 0 ? "regions" : "regions (" + std::to_string(lane + 1) + ")",
                       events);
      AppendThreadSortIndex(sides[s].pid, tid, -1000 + static_cast<int>(lane), events);
    }
    for (RegionSlice& slice : *side_slices[s]) {
      events.push_back({{"name", slice.name},
                        {"cat", "region"},
                        {"ph", "X"},
                        {"ts", TraceEventUs(slice.start_ns, sides[s].origin_ns)},
                        {"dur", static_cast<double>(slice.end_ns - slice.start_ns) / 1000.0},
                        {"pid", sides[s].pid},
                        {"tid", slice.tid},
                        {"args", slice.args}});
    }
  }

  // A flow per matched pair, bound to the enclosing slice at each region's
  // midpoint (a lane holds no overlapping slices, so that slice is the
  // region). Trace processors read flows in time order and drop a flow whose
  // end comes before its start, so it starts on whichever side's region is
  // earlier on the shared axis; `args.side` of each end says which is which.
  size_t flows = 0, flows_skipped = 0;
  for (size_t p = 0; p < slices_a.size(); ++p) {
    const RegionSlice& a = slices_a[p];
    const RegionSlice& b = slices_b[p];
    if (a.end_ns <= a.start_ns || b.end_ns <= b.start_ns) {
      ++flows_skipped;  // a zero-length slice encloses no midpoint
      continue;
    }
    const double mid_a = (TraceEventUs(a.start_ns, sides[0].origin_ns) + TraceEventUs(a.end_ns, sides[0].origin_ns)) / 2;
    const double mid_b = (TraceEventUs(b.start_ns, sides[1].origin_ns) + TraceEventUs(b.end_ns, sides[1].origin_ns)) / 2;
    const bool a_first = mid_a <= mid_b;
    json start = {{"name", "matched region"}, {"cat", "magneton.match"}, {"ph", "s"}, {"id", flows + 1}};
    json finish = {{"name", "matched region"}, {"cat", "magneton.match"}, {"ph", "f"}, {"bp", "e"}, {"id", flows + 1}};
    start["ts"] = a_first ? mid_a : mid_b;
    start["pid"] = a_first ? sides[0].pid : sides[1].pid;
    start["tid"] = a_first ? a.tid : b.tid;
    finish["ts"] = a_first ? mid_b : mid_a;
    finish["pid"] = a_first ? sides[1].pid : sides[0].pid;
    finish["tid"] = a_first ? b.tid : a.tid;
    events.push_back(std::move(start));
    events.push_back(std::move(finish));
    ++flows;
  }

  json not_drawn_json = json::object();
  for (const auto& [kind, n] : not_drawn) not_drawn_json[kind] = n;
  json meta = {
      {"magneton_export", "perfetto-diff"},
      {"time_axis",
       "one axis for both runs: each run's job start (its first op) is at ts " +
           std::to_string(static_cast<double>(lead_ns) / 1000.0) +
           " us; what lies before it is that run's start-up (interpreter, imports)"},
      {"job_start_ts_us", static_cast<double>(lead_ns) / 1000.0},
      {"a", SideMeta(sides[0], lead_ns)},
      {"b", SideMeta(sides[1], lead_ns)},
      {"energy", {{"domain", r.domain}, {"provenance", ProvenanceName(r.provenance)}}},
      {"options",
       {{"tau", r.options.tau},
        {"output_epsilon", r.options.output_epsilon},
        {"match_epsilon", r.options.match.epsilon},
        {"min_share", r.options.min_share},
        {"min_same_work_share", r.options.min_same_work_share},
        {"confidence", r.options.confidence}}},
      {"runs", r.runs},
      {"regions",
       {{"findings", r.findings.size()},
        {"matched_region_pairs", r.matched_region_pairs},
        {"instance_pairs_drawn", pairs},
        {"instances_without_ops", instances_without_ops},
        {"region_tracks", lanes_total},
        {"flows", flows},
        {"flows_skipped_zero_length", flows_skipped},
        {"findings_not_drawn", not_drawn_json}}},
      {"energy_counters", counters},
  };
  json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", std::move(meta)}};
  // Strings from traces may hold invalid UTF-8; replace rather than throw.
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!out) return Internal("writing the Perfetto diff failed");
  return Status::Ok();
}

}  // namespace magneton::report
