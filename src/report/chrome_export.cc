#include "report/chrome_export.h"

#include <nlohmann/json.hpp>

#include <set>

#include "trace/op_args.h"

namespace magneton {

Status WriteChromeTrace(const Trace& trace, std::ostream& out) {
  using nlohmann::json;
  json events = json::array();
  const int64_t pid = 1;
  const int64_t t0 = trace.meta.start_monotonic_ns;
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", "magneton: " + trace.meta.label}}}});
  std::set<int64_t> threads;
  for (const OpEvent& op : trace.ops) {
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
    // Microseconds with fractional nanoseconds: the trace-event unit.
    events.push_back({{"name", trace.str(op.name_id)},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"ts", static_cast<double>(op.start_ns - t0) / 1000.0},
                      {"dur", static_cast<double>(op.end_ns - op.start_ns) / 1000.0},
                      {"pid", pid},
                      {"tid", op.thread_id},
                      {"args", std::move(args)}});
  }
  for (int64_t tid : threads) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"name", "thread " + std::to_string(tid)}}}});
  }
  json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"},
              {"otherData", {{"label", trace.meta.label}, {"command_line", trace.meta.command_line}}}};
  // Strings from traces may hold invalid UTF-8; replace rather than throw.
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!out) return Internal("writing the Chrome trace failed");
  return Status::Ok();
}

}  // namespace magneton
