// ORT profile JSON -> NodeEvent/RunEvent. The profile is a JSON array of
// Chrome trace events; node kernels are cat "Node" named "<node>_kernel_time"
// (the "_fence_before"/"_fence_after" events around them are skipped).
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ort/ort.h"

namespace magneton::ort {
namespace {

using nlohmann::json;

constexpr std::string_view kKernelSuffix = "_kernel_time";

Status Bad(size_t index, const json& event, const std::string& what) {
  std::string name = event.is_object() && event.contains("name") && event["name"].is_string()
                         ? " (" + event["name"].get<std::string>() + ")"
                         : "";
  return InvalidArgument("ONNX Runtime profile event " + std::to_string(index) + name + ": " + what);
}

// ts/dur are numbers of microseconds; tid/pid are numbers (older ORT builds
// wrote a hashed thread id, still a number). Times beyond kMaxProfileUs are
// corrupt (no session runs for 115 days) and would overflow the nanosecond
// arithmetic of ingestion; a float outside int64 would be undefined to cast
// (both found by the fuzz build: fuzz/corpus/ort_profile/ts_*).
constexpr int64_t kMaxProfileUs = 10'000'000'000'000;  // 1e13 µs

StatusOr<int64_t> Int(const json& event, const char* key, size_t index, bool is_time = true) {
  auto it = event.find(key);
  if (it == event.end() || !it->is_number()) return Bad(index, event, std::string("'") + key + "' missing or not a number");
  const double limit = is_time ? static_cast<double>(kMaxProfileUs) : 9.2e18;
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (!(v >= -limit && v <= limit)) return Bad(index, event, std::string("'") + key + "' is out of range");
    return static_cast<int64_t>(v);
  }
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (is_time && v > static_cast<uint64_t>(kMaxProfileUs)) {
      return Bad(index, event, std::string("'") + key + "' is out of range");
    }
    return static_cast<int64_t>(v);  // a hashed thread id may use all 64 bits
  }
  const int64_t v = it->get<int64_t>();
  if (is_time && (v < -kMaxProfileUs || v > kMaxProfileUs)) {
    return Bad(index, event, std::string("'") + key + "' is out of range");
  }
  return v;
}

// [{"float": [1, 12, 64]}, {"int64": [2]}]
Status Shapes(const json& event, const json& args, const char* key, size_t index, std::vector<TypedShape>* out) {
  auto it = args.find(key);
  if (it == args.end()) return Status::Ok();  // older ORT or shapes off
  if (!it->is_array()) return Bad(index, event, std::string("args.") + key + " is not an array");
  for (const json& entry : *it) {
    if (!entry.is_object() || entry.size() != 1 || !entry.begin().value().is_array())
      return Bad(index, event, std::string("args.") + key + " entry is not {type: [dims]}");
    TypedShape ts;
    ts.dtype = OrtTypeName(entry.begin().key());
    for (const json& d : entry.begin().value()) {
      if (!d.is_number_integer()) return Bad(index, event, std::string("args.") + key + " has a non-integer dim");
      ts.shape.push_back(d.get<int64_t>());
    }
    out->push_back(std::move(ts));
  }
  return Status::Ok();
}

}  // namespace

std::string OrtTypeName(std::string_view n) {
  if (n == "float") return "float32";
  if (n == "double") return "float64";
  if (n == "MLFloat16") return "float16";
  if (n == "BFloat16") return "bfloat16";
  for (std::string_view plain : {"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool",
                                 "float16", "bfloat16", "string"}) {
    if (n == plain) return std::string(plain);
  }
  return std::string(n);
}

StatusOr<Profile> ParseProfile(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return InvalidArgument("ONNX Runtime profile is not valid JSON (truncated or not a profile file)");
  if (!doc.is_array()) return InvalidArgument("ONNX Runtime profile is not a JSON array of trace events");
  Profile p;
  for (size_t i = 0; i < doc.size(); ++i) {
    const json& e = doc[i];
    if (!e.is_object()) return Bad(i, e, "not a JSON object");
    auto cat = e.find("cat");
    auto name = e.find("name");
    if (cat == e.end() || !cat->is_string() || name == e.end() || !name->is_string())
      return Bad(i, e, "'cat' or 'name' missing or not a string");
    const std::string& n = name->get_ref<const std::string&>();
    if (*cat == "Session" && n == "model_run") {
      MAGNETON_ASSIGN_OR_RETURN(int64_t ts, Int(e, "ts", i));
      MAGNETON_ASSIGN_OR_RETURN(int64_t dur, Int(e, "dur", i));
      if (dur < 0) return Bad(i, e, "negative 'dur'");
      p.runs.push_back({ts, dur});
      continue;
    }
    if (*cat != "Node" || n.size() <= kKernelSuffix.size() ||
        n.compare(n.size() - kKernelSuffix.size(), kKernelSuffix.size(), kKernelSuffix) != 0) {
      continue;
    }
    NodeEvent ev;
    ev.node_name = n.substr(0, n.size() - kKernelSuffix.size());
    MAGNETON_ASSIGN_OR_RETURN(ev.ts_us, Int(e, "ts", i));
    MAGNETON_ASSIGN_OR_RETURN(ev.dur_us, Int(e, "dur", i));
    MAGNETON_ASSIGN_OR_RETURN(ev.thread_id, Int(e, "tid", i, /*is_time=*/false));
    if (ev.dur_us < 0) return Bad(i, e, "negative 'dur'");
    auto args = e.find("args");
    if (args == e.end() || !args->is_object()) return Bad(i, e, "'args' missing or not an object");
    auto op = args->find("op_name");
    if (op == args->end() || !op->is_string()) return Bad(i, e, "'args.op_name' missing or not a string");
    ev.op_type = op->get<std::string>();
    auto provider = args->find("provider");
    if (provider != args->end() && provider->is_string()) ev.provider = provider->get<std::string>();
    MAGNETON_RETURN_IF_ERROR(Shapes(e, *args, "input_type_shape", i, &ev.inputs));
    MAGNETON_RETURN_IF_ERROR(Shapes(e, *args, "output_type_shape", i, &ev.outputs));
    p.nodes.push_back(std::move(ev));
  }
  auto by_ts = [](const auto& a, const auto& b) { return a.ts_us < b.ts_us; };
  std::stable_sort(p.nodes.begin(), p.nodes.end(), by_ts);
  std::stable_sort(p.runs.begin(), p.runs.end(), by_ts);
  return p;
}

StatusOr<Profile> ReadProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open ONNX Runtime profile " + path);
  std::ostringstream text;
  text << in.rdbuf();
  auto p = ParseProfile(text.str());
  if (!p.ok()) return Status(p.status().code(), p.status().message() + " [" + path + "]");
  return p;
}

}  // namespace magneton::ort
