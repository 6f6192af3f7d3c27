#include "report/chrome_export.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "report/trace_events.h"

namespace magneton {

Status WriteChromeTrace(const Trace& trace, std::ostream& out) {
  using nlohmann::json;
  json events = json::array();
  const int64_t pid = 1;
  // The recording's start; an event before it (none in a trace the recorder
  // wrote) moves the origin back rather than get a negative timestamp.
  const int64_t t0 =
      std::min(trace.meta.start_monotonic_ns, report::EarliestEventNs(trace, trace.meta.start_monotonic_ns));
  report::AppendProcessName(pid, "magneton: " + trace.meta.label, 0, events);
  report::AppendOpSlices(trace, pid, t0, events);
  json energy = report::AppendEnergyCounters(trace, pid, t0, events);
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData",
               {{"label", trace.meta.label},
                {"command_line", trace.meta.command_line},
                {"start_monotonic_ns", t0},
                {"energy_counters", std::move(energy)}}}};
  // Strings from traces may hold invalid UTF-8; replace rather than throw.
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!out) return Internal("writing the Chrome trace failed");
  return Status::Ok();
}

}  // namespace magneton
