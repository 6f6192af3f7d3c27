#include "report/summary.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "energy/attribution.h"
#include "base/format.h"
#include "detect/detect.h"
#include "trace/op_times.h"

#include <algorithm>
#include <unordered_map>

namespace magneton {

std::vector<OpStats> OpStatsByName(const Trace& trace) {
  const std::vector<int64_t> self_ns = SelfTimesNs(trace);
  std::unordered_map<int64_t, OpStats> by_name;
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const OpEvent& op = trace.ops[i];
    OpStats& s = by_name[op.name_id];
    s.name = trace.str(op.name_id);
    s.count += 1;
    s.total_ns += op.end_ns - op.start_ns;
    s.self_ns += self_ns[i];
  }
  std::vector<OpStats> out;
  out.reserve(by_name.size());
  for (auto& [_, s] : by_name) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const OpStats& a, const OpStats& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  return out;
}

namespace {

std::string Ms(int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); }

}  // namespace

std::string FormatSummary(const Trace& trace, int top) {
  std::string out;
  const RunMetadata& m = trace.meta;
  out += fmt::format("run        {}\n", m.label.empty() ? "(no label)" : m.label);
  out += fmt::format("command    {}\n", m.command_line);
  out += fmt::format("host       {}    engine {}\n", m.host, m.engine);
  for (const auto& [name, version] : m.versions) out += fmt::format("version    {} {}\n", name, version);

  int64_t first = INT64_MAX, last = INT64_MIN, top_level = 0;
  for (const OpEvent& op : trace.ops) {
    first = std::min(first, op.start_ns);
    last = std::max(last, op.end_ns);
    if (op.parent_id == kNoId) ++top_level;
  }
  int64_t span_ns = trace.ops.empty() ? 0 : last - first;
  out += fmt::format("ops        {} ({} top-level), {} tensors, span {} ms\n", trace.ops.size(), top_level,
                     trace.tensors.size() + trace.tensors_not_read, Ms(span_ns));
  // Top-level ops with no tensor link are outside the dataflow match and diff
  // follow; say how many rather than let them degrade a comparison silently.
  int64_t no_tensors = 0;
  for (const OpEvent& op : trace.ops) {
    if (op.parent_id == kNoId && !IsRecorderOp(trace, op) && trace.LinksOf(op.id).empty()) ++no_tensors;
  }
  if (no_tensors > 0) {
    out += fmt::format("warning    {} of {} top-level ops have no tensors: match and diff cannot follow their dataflow\n",
                       no_tensors, top_level);
  }
  // A windowed recording holds part of the run: say which part.
  if (auto steps = m.extra.find("window.steps_recorded"); steps != m.extra.end()) {
    auto get = [&](const char* key) {
      auto it = m.extra.find(key);
      return it == m.extra.end() ? std::string() : it->second;
    };
    const std::string schedule = get("window.schedule");
    out += fmt::format("window     {} of {} steps recorded ({}; steps from {}), {} unrecorded span(s)\n", steps->second,
                       get("window.steps"), schedule.empty() ? "every step" : schedule, get("window.step_source"),
                       get("window.unrecorded_spans"));
  }
  // What else ran on the machine: timings and energy grow with it (docs/DIFF.md "A busy machine").
  if (const detect::MachineLoadShares whole = detect::MachineLoadOf(m); whole.Total() >= 0) {
    // Over the job (first op to last op) when the recorder sampled a series:
    // what the diff uses.
    int64_t job_start_ns = INT64_MAX, job_end_ns = INT64_MIN;
    for (const OpEvent& op : trace.ops) {
      job_start_ns = std::min(job_start_ns, op.start_ns);
      job_end_ns = std::max(job_end_ns, op.end_ns);
    }
    const detect::MachineLoadShares load = detect::MachineLoadOf(m, job_start_ns, job_end_ns);
    out += fmt::format("machine    other processes took {:.0f}% of the CPU time{}, steal {:.0f}%{}\n",
                       100 * load.others_cpu_share,
                       load.over_job ? fmt::format(" while the job ran ({:.0f}% over the whole recording)",
                                                   100 * whole.others_cpu_share)
                                     : std::string(" over the whole recording"),
                       100 * std::max(0.0, load.steal_share),
                       load.Total() >= detect::kMaterialLoad
                           ? ": a busy machine; this run's times and energy are inflated by it"
                           : "");
    if (!load.over_job_error.empty()) out += "warning    the job's own load not taken: " + load.over_job_error + "\n";
  } else if (auto error = m.extra.find("machine.load_error"); error != m.extra.end()) {
    out += fmt::format("machine    load not measured: {}\n", error->second);
  }
  for (const auto& [key, value] : m.extra) {
    // ort.session[N].unknown_nodes / .ambiguous_nodes (docs/TRACE_FORMAT.md)
    if (key.starts_with("ort.session") && (key.ends_with(".unknown_nodes") || key.ends_with(".ambiguous_nodes")) &&
        value != "0") {
      out += fmt::format("warning    {} = {}: profile events not linked to one graph node\n", key, value);
    }
  }

  std::vector<OpStats> stats = OpStatsByName(trace);
  out += fmt::format("\nTop ops by self time\n{:<40} {:>8} {:>12} {:>12}\n", "op", "calls", "self ms", "total ms");
  for (size_t i = 0; i < stats.size() && i < static_cast<size_t>(top); ++i) {
    const OpStats& s = stats[i];
    out += fmt::format("{:<40} {:>8} {:>12} {:>12}\n", s.name, s.count, Ms(s.self_ns), Ms(s.total_ns));
  }

  // Module scopes by the time of the top-level ops issued inside them, so
  // nested ops are not counted twice.
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> by_scope;  // scope -> (ns, ops)
  for (const OpEvent& op : trace.ops) {
    if (op.parent_id != kNoId) continue;
    auto& e = by_scope[op.scope_id];
    e.first += op.end_ns - op.start_ns;
    e.second += 1;
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> scopes;
  for (const auto& [id, v] : by_scope) {
    scopes.emplace_back(id == kNoId ? std::string("(outside any module)") : trace.ScopePath(id), v);
  }
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    return a.second.first != b.second.first ? a.second.first > b.second.first : a.first < b.first;
  });
  out += fmt::format("\nTop module scopes by op time\n{:<60} {:>8} {:>12}\n", "scope", "ops", "ms");
  for (size_t i = 0; i < scopes.size() && i < static_cast<size_t>(top); ++i) {
    out += fmt::format("{:<60} {:>8} {:>12}\n", scopes[i].first, scopes[i].second.second, Ms(scopes[i].second.first));
  }

  out += fmt::format("\nConfig snapshot ({} entries)\n", trace.config.size());
  for (const ConfigEntry& c : trace.config) {
    out += fmt::format("  {:<50} = {:<20} [{}]\n", c.key, c.value, c.source);
  }
  out += FormatEnergySummary(trace, top);
  return out;
}

namespace {

std::string Meta(const Trace& trace, const std::string& key) {
  auto it = trace.meta.extra.find(key);
  return it == trace.meta.extra.end() ? "" : it->second;
}

// Where the device activities came from and how well they sit on the op
// clock (meta gpu.*, docs/TRACE_FORMAT.md), or why there are none.
std::string DeviceActivityLines(const Trace& trace) {
  std::string out;
  if (!Meta(trace, "gpu.error").empty()) out += "gpu        device activity not ingested: " + Meta(trace, "gpu.error") + "\n";
  if (trace.device_activities.empty()) {
    if (!Meta(trace, "gpu.off").empty()) out += "gpu        device activity off: " + Meta(trace, "gpu.off") + "\n";
    return out;
  }
  size_t linked = 0;
  for (const DeviceActivity& a : trace.device_activities) linked += a.op_id != kNoId;
  out += fmt::format("gpu        {} device activities from {} ({} linked to ops, {} not)", trace.device_activities.size(),
                     Meta(trace, "gpu.source").empty() ? std::string("?") : Meta(trace, "gpu.source"), linked,
                     trace.device_activities.size() - linked);
  const std::string method = Meta(trace, "gpu.clock_method");
  if (!method.empty()) {
    out += fmt::format("; clock {} (error <= {} ns", method, Meta(trace, "gpu.clock_error_ns"));
    if (method == "host_ops") out += fmt::format(" over {} paired host ops", Meta(trace, "gpu.clock_paired"));
    out += ")";
  }
  const std::string dropped = Meta(trace, "gpu.dropped");
  if (!dropped.empty() && dropped != "0") out += fmt::format("; {} malformed event(s) dropped", dropped);
  return out + "\n";
}

// How a GPU domain's power was read (meta energy.nvml.<domain>.*, written
// by the NVML meter): the source, its refresh period and its check against
// the energy counter. Empty for other domains and older traces.
std::string PowerSourceLine(const Trace& trace, const std::string& domain) {
  const std::string prefix = "energy.nvml." + domain + ".";
  const std::string source = Meta(trace, prefix + "source");
  if (source.empty()) return "";
  std::string out = "    power: " + source;
  const std::string refresh_us = Meta(trace, prefix + "instant_refresh_us");
  if (!refresh_us.empty()) out += "; the driver refreshed it every " + refresh_us + " us (median)";
  const std::string check = Meta(trace, prefix + "instant_vs_counter");
  if (!check.empty()) out += "; " + check;
  return out + "\n";
}

// A GPU domain attributed through its activities: the energy of the work
// and of the idle device, then the costliest kernels by name.
std::string DeviceEnergyLines(const Trace& trace, const energy::Attribution& a, int top) {
  std::string out;
  const char* prov = ProvenanceHeading(a.provenance);
  for (const energy::DeviceEnergy& d : a.devices) {
    out += fmt::format("  {:<16} {} total {:.3f} J over {:.3f} s: device work {:.3f} J ({} activities), idle {:.3f} J "
                       "(inside the job {:.3f} J)",
                       d.domain, prov, d.total_uj / 1e6, (d.window_end_ns - d.window_start_ns) / 1e9,
                       d.kernels_uj / 1e6, d.kernels.size(), d.idle_uj / 1e6, d.idle_in_job_uj / 1e6);
    if (a.unlinked_device_uj > 0) out += fmt::format("; not linked to an op {:.3f} J", a.unlinked_device_uj / 1e6);
    out += fmt::format("\n    samples every {} (median); {} of {} activities are shorter (their energy is the "
                       "period's average power times their time)\n",
                       FormatDuration(d.sample_period_ns), d.shorter_than_period, d.kernels.size());
    out += PowerSourceLine(trace, d.domain);
    std::unordered_map<int64_t, std::tuple<double, int64_t, int64_t>> by_name;  // name -> (uj, count, ns)
    for (const energy::KernelEnergy& k : d.kernels) {
      auto& e = by_name[trace.device_activities[k.activity].name_id];
      std::get<0>(e) += k.energy_uj;
      std::get<1>(e) += 1;
      std::get<2>(e) += k.duration_ns;
    }
    std::vector<std::pair<int64_t, std::tuple<double, int64_t, int64_t>>> rows(by_name.begin(), by_name.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& x, const auto& y) { return std::get<0>(x.second) > std::get<0>(y.second); });
    out += fmt::format("    {:<40} {:>8} {:>12} {:>12}   [{}]\n", "device work", "count", "mJ", "device ms", prov);
    for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(top); ++i) {
      const auto& [uj, n, ns] = rows[i].second;
      std::string name = trace.str(rows[i].first);
      name = ClipUtf8(name, 40);
      out += fmt::format("    {:<40} {:>8} {:>12.3f} {:>12}\n", name, n, uj / 1e3, Ms(ns));
    }
  }
  return out;
}

}  // namespace

std::string FormatEnergySummary(const Trace& trace, int top) {
  const std::string gpu_lines = DeviceActivityLines(trace);
  if (trace.energy_samples.empty()) return "\n" + gpu_lines + "Energy: no samples in this trace\n";
  std::set<std::string> domains;
  for (const EnergySample& e : trace.energy_samples) domains.insert(e.domain);
  std::string out = "\n" + gpu_lines +
                    "Energy (per domain; host domains attributed to ops by their exclusive time, GPU domains with "
                    "device activity by the kernels, copies and fills each op launched)\n";
  for (const std::string& domain : domains) {
    auto attribution = energy::AttributeEnergy(trace, domain);
    if (!attribution.ok()) {
      out += fmt::format("  {:<16} cannot attribute: {}\n", domain, attribution.status().message());
      continue;
    }
    const energy::Attribution& a = *attribution;
    const char* prov = ProvenanceHeading(a.provenance);
    if (a.basis == "device") {
      out += DeviceEnergyLines(trace, a, top);
      if (a.recorder_uj > 0) out += fmt::format("    the recorder's own device work {:.3f} J, not the job's\n", a.recorder_uj / 1e6);
    } else {
      out += fmt::format("  {:<16} {} total {:.3f} J over {:.3f} s: ops {:.3f} J, outside ops {:.3f} J", domain,
                         prov, a.total_uj / 1e6, (a.window_end_ns - a.window_start_ns) / 1e9, a.attributed_uj / 1e6,
                         a.unattributed_uj / 1e6);
      // Issue time is part of "outside ops"; recorder ops are part of "ops".
      out += fmt::format(" (of which issuing the next op {:.3f} J)", a.issue_uj / 1e6);
      if (a.recorder_ns > 0) out += fmt::format("; the recorder's own ops {:.3f} J, not the job's", a.recorder_uj / 1e6);
      out += "\n" + PowerSourceLine(trace, domain);
    }
    std::unordered_map<int64_t, std::pair<double, int64_t>> by_name;  // name -> (uj, calls)
    for (size_t i = 0; i < a.ops.size() && i < trace.ops.size(); ++i) {
      auto& e = by_name[trace.ops[i].name_id];
      e.first += a.ops[i].exclusive_uj;
      e.second += 1;
    }
    std::vector<std::pair<int64_t, std::pair<double, int64_t>>> rows(by_name.begin(), by_name.end());
    std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
    out += fmt::format("    {:<40} {:>8} {:>12} {:>7}   [{}]\n", "op",
                       "calls", a.basis == "device" ? "launched mJ" : "self mJ", "share", prov);
    for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(top); ++i) {
      double share = a.total_uj > 0 ? 100.0 * rows[i].second.first / a.total_uj : 0.0;
      out += fmt::format("    {:<40} {:>8} {:>12.3f} {:>6.1f}%\n", trace.str(rows[i].first), rows[i].second.second,
                         rows[i].second.first / 1e3, share);
    }
  }
  return out;
}

}  // namespace magneton
