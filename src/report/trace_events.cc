#include "report/trace_events.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "base/format.h"
#include "energy/attribution.h"
#include "trace/op_args.h"

namespace magneton::report {
namespace {

using nlohmann::json;

json CounterEvent(const std::string& name, const char* unit, double value, int64_t t_ns, int64_t pid,
                  int64_t origin_ns) {
  // Perfetto names a counter track "<name> <arg key>"; tid is ignored for
  // counters (they belong to the process) but kept for readers that want one.
  return {{"name", name},         {"ph", "C"}, {"ts", TraceEventUs(t_ns, origin_ns)},
          {"pid", pid},           {"tid", 0},  {"args", {{unit, value}}}};
}

std::set<std::string> Domains(const Trace& trace) {
  std::set<std::string> out;
  for (const EnergySample& s : trace.energy_samples) out.insert(s.domain);
  return out;
}

}  // namespace

double TraceEventUs(int64_t t_ns, int64_t origin_ns) { return static_cast<double>(t_ns - origin_ns) / 1000.0; }

int64_t EarliestEventNs(const Trace& trace, int64_t fallback_ns) {
  int64_t earliest = fallback_ns;
  bool any = false;
  auto take = [&](int64_t t) {
    earliest = any ? std::min(earliest, t) : t;
    any = true;
  };
  for (const OpEvent& op : trace.ops) take(op.start_ns);
  for (const EnergySample& s : trace.energy_samples) take(s.t_ns);
  return earliest;
}

void AppendProcessName(int64_t pid, const std::string& name, int sort_index, json& events) {
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
  events.push_back(
      {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", sort_index}}}});
}

void AppendThreadName(int64_t pid, int64_t tid, const std::string& name, json& events) {
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
}

void AppendThreadSortIndex(int64_t pid, int64_t tid, int sort_index, json& events) {
  events.push_back(
      {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", sort_index}}}});
}

int64_t AppendOpSlices(const Trace& trace, int64_t pid, int64_t origin_ns, json& events) {
  // Each op's energy in every domain its samples can attribute (a domain that
  // cannot, e.g. one sample, is left out of the args; the counter tracks say why).
  std::vector<std::pair<std::string, energy::Attribution>> energies;
  for (const std::string& domain : Domains(trace)) {
    auto attribution = energy::AttributeEnergy(trace, domain);
    if (attribution.ok() && attribution->ops.size() == trace.ops.size()) {
      energies.emplace_back(domain, std::move(attribution).value());
    }
  }
  std::set<int64_t> threads;
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const OpEvent& op = trace.ops[i];
    threads.insert(op.thread_id);
    json args = {{"op_id", op.id}};
    if (op.scope_id != kNoId) args["scope"] = trace.ScopePath(op.scope_id);
    if (!op.args.empty()) {
      // Structured where the arguments parse (docs/TRACE_FORMAT.md), else their text as stored.
      auto parsed = ParseOpArgs(op.args);
      args["args"] = parsed.ok() ? std::move(parsed).value() : json(op.args);
    }
    if (op.call_path_id != kNoId) {
      auto frames = trace.CallPathFrames(op.call_path_id);
      if (!frames.empty()) args["source"] = frames.back();
    }
    for (const auto& [domain, attribution] : energies) {
      const energy::OpEnergy& e = attribution.ops[i];
      args["energy"][domain] = {{"inclusive_uj", e.inclusive_uj},
                                {"exclusive_uj", e.exclusive_uj},
                                {"provenance", ProvenanceName(attribution.provenance)}};
    }
    // Microseconds with fractional nanoseconds: the trace-event unit.
    events.push_back({{"name", trace.str(op.name_id)},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"ts", TraceEventUs(op.start_ns, origin_ns)},
                      {"dur", static_cast<double>(op.end_ns - op.start_ns) / 1000.0},
                      {"pid", pid},
                      {"tid", op.thread_id},
                      {"args", std::move(args)}});
  }
  for (int64_t tid : threads) AppendThreadName(pid, tid, "thread " + std::to_string(tid), events);
  return threads.empty() ? 0 : *threads.rbegin();
}

json AppendEnergyCounters(const Trace& trace, int64_t pid, int64_t origin_ns, json& events) {
  // Tracks are keyed by provenance too: a domain's estimated samples never
  // share a track, or a label, with measured ones.
  std::map<std::pair<std::string, Provenance>, std::vector<const EnergySample*>> groups;
  for (const EnergySample& s : trace.energy_samples) groups[{s.domain, s.provenance}].push_back(&s);
  json drawn = json::array();
  for (auto& [key, samples] : groups) {
    const auto& [domain, provenance] = key;
    std::stable_sort(samples.begin(), samples.end(),
                     [](const EnergySample* x, const EnergySample* y) { return x->t_ns < y->t_ns; });
    const std::string label = std::string(" (") + ProvenanceName(provenance) + ")";
    const std::string power_track = domain + " power" + label;
    const std::string energy_track = domain + " energy" + label;
    size_t intervals = 0, skipped = 0;
    double cumulative_j = 0;
    const EnergySample* prev = nullptr;  // the last sample that carried a value
    double last_power_w = NAN;
    for (const EnergySample* s : samples) {
      const bool counter = !std::isnan(s->energy_uj);
      const bool power_only = !counter && !std::isnan(s->power_mw);
      if (!counter && !power_only) {
        ++skipped;
        continue;
      }
      if (power_only) {
        // A power meter's reading is the power at that instant; energy is its
        // trapezoid integral, as attribution integrates it.
        last_power_w = s->power_mw / 1000.0;
        events.push_back(CounterEvent(power_track, "W", last_power_w, s->t_ns, pid, origin_ns));
        if (prev && !std::isnan(prev->power_mw) && s->t_ns > prev->t_ns) {
          cumulative_j += (prev->power_mw + s->power_mw) / 2 * static_cast<double>(s->t_ns - prev->t_ns) * 1e-12;
          ++intervals;
        }
        events.push_back(CounterEvent(energy_track, "J", cumulative_j, s->t_ns, pid, origin_ns));
        prev = s;
        continue;
      }
      if (prev && !std::isnan(prev->energy_uj)) {
        const int64_t dt_ns = s->t_ns - prev->t_ns;
        const double de_uj = s->energy_uj - prev->energy_uj;
        if (dt_ns <= 0 || de_uj < 0) {
          ++skipped;  // a repeated instant or a counter that went back: no power to draw
          continue;
        }
        // µJ per ns is kW: ×1000 for watts. The interval's mean power holds
        // from its first sample to its last (a counter track is a step).
        last_power_w = de_uj / static_cast<double>(dt_ns) * 1000.0;
        events.push_back(CounterEvent(power_track, "W", last_power_w, prev->t_ns, pid, origin_ns));
        cumulative_j += de_uj * 1e-6;
        ++intervals;
      }
      events.push_back(CounterEvent(energy_track, "J", cumulative_j, s->t_ns, pid, origin_ns));
      prev = s;
    }
    // Close the power track at the last sample with the last interval's power.
    if (prev && !std::isnan(prev->energy_uj) && !std::isnan(last_power_w)) {
      events.push_back(CounterEvent(power_track, "W", last_power_w, prev->t_ns, pid, origin_ns));
    }
    json entry = {{"domain", domain},
                  {"provenance", ProvenanceName(provenance)},
                  {"meter", samples.front()->meter},
                  {"samples", samples.size()},
                  {"intervals", intervals},
                  {"skipped_samples", skipped},
                  {"power_track", power_track + " W"},
                  {"energy_track", energy_track + " J"}};
    if (intervals == 0) entry["note"] = "fewer than two usable samples: no power drawn";
    drawn.push_back(std::move(entry));
  }
  return drawn;
}

}  // namespace magneton::report
