#include "trace/line_trace_file.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "trace/redact.h"

namespace magneton {

Status WriteLineTrace(const std::string& path, const LineTrace& trace) {
  nlohmann::json j;
  j["schema"] = "magneton.linetrace/1";
  j["targets"] = nlohmann::json::array();
  for (const LineTraceTarget& t : trace.targets) {
    j["targets"].push_back({{"file", t.file}, {"function", t.function}, {"line", t.line}});
  }
  j["calls"] = nlohmann::json::array();
  for (const LineCall& c : trace.calls) {
    nlohmann::json values = nlohmann::json::array();
    // Shared with the diff report: no secret inside a value, whoever wrote it.
    for (const WatchedValue& v : c.values) values.push_back({v.event, v.expr, RedactSecretsInText(v.value)});
    j["calls"].push_back({{"target", c.target}, {"lines", c.lines}, {"values", std::move(values)}});
  }
  std::ofstream out(path, std::ios::trunc);
  if (!out) return InvalidArgument("cannot write " + path);
  out << j.dump();
  if (!out) return InvalidArgument("cannot write " + path);
  return Status::Ok();
}

StatusOr<LineTrace> ReadLineTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("no line trace at " + path + " (did the re-run reach the traced function?)");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("schema", "") != "magneton.linetrace/1") {
    return InvalidArgument(path + " is not a magneton line trace");
  }
  LineTrace t;
  for (const auto& jt : j["targets"]) {
    if (!jt.is_object()) continue;
    t.targets.push_back({jt.value("file", ""), jt.value("function", ""), jt.value("line", int64_t{0})});
  }
  for (const auto& jc : j["calls"]) {
    if (!jc.is_object()) continue;
    LineCall c;
    c.target = jc.value("target", 0);
    if (jc.contains("lines") && jc["lines"].is_array()) {
      for (const auto& l : jc["lines"]) {
        if (l.is_number_integer()) c.lines.push_back(l.get<int64_t>());
      }
    }
    if (jc.contains("values") && jc["values"].is_array()) {
      for (const auto& v : jc["values"]) {
        if (!v.is_array() || v.size() != 3 || !v[0].is_number_unsigned() || !v[1].is_string() || !v[2].is_string()) {
          continue;
        }
        c.values.push_back({v[0].get<size_t>(), v[1].get<std::string>(), v[2].get<std::string>()});
      }
    }
    t.calls.push_back(std::move(c));
  }
  return t;
}

}  // namespace magneton
