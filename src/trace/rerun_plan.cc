#include "trace/rerun_plan.h"

#include <nlohmann/json.hpp>

#include "trace/redact.h"

namespace magneton {
namespace {

constexpr int kPlanVersion = 1;

bool NameShaped(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

}  // namespace

std::string EncodeRunPlan(const RunPlan& plan) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : plan.env) env[k] = v;
  // nlohmann's object is a std::map: keys come out sorted.
  const nlohmann::json j = {{"argv", plan.argv},
                            {"cwd", plan.cwd},
                            {"env", env},
                            {"interpreter", plan.interpreter},
                            {"version", kPlanVersion}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<RunPlan> DecodeRunPlan(std::string_view text, bool require_canonical) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("the re-run plan is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "argv" && key != "cwd" && key != "env" && key != "interpreter" && key != "version") {
      return InvalidArgument("the re-run plan has an unknown field '" + key + "'");
    }
  }
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kPlanVersion) {
    return InvalidArgument("the re-run plan is not version " + std::to_string(kPlanVersion));
  }
  RunPlan plan;
  if (!j.contains("argv") || !j["argv"].is_array() || j["argv"].empty()) {
    return InvalidArgument("the re-run plan has no argv");
  }
  for (const auto& a : j["argv"]) {
    if (!a.is_string() || HasNul(a.get<std::string>())) return InvalidArgument("the re-run plan's argv holds a non-string");
    plan.argv.push_back(a.get<std::string>());
  }
  if (!j.contains("cwd") || !j["cwd"].is_string() || HasNul(j["cwd"].get<std::string>())) {
    return InvalidArgument("the re-run plan has no working directory");
  }
  plan.cwd = j["cwd"].get<std::string>();
  if (!j.contains("env") || !j["env"].is_object()) return InvalidArgument("the re-run plan has no env object");
  for (const auto& [k, v] : j["env"].items()) {
    if (!NameShaped(k)) return InvalidArgument("the re-run plan sets an environment name that is not NAME-shaped");
    if (!v.is_string() || HasNul(v.get<std::string>())) {
      return InvalidArgument("the re-run plan's environment value of " + k + " is not a string");
    }
    plan.env[k] = v.get<std::string>();
  }
  if (!j.contains("interpreter") || !j["interpreter"].is_string()) {
    return InvalidArgument("the re-run plan has no interpreter field");
  }
  plan.interpreter = j["interpreter"].get<std::string>();
  // One reading only: the bytes must be the canonical encoding of what was read.
  if (require_canonical && EncodeRunPlan(plan) != text) return InvalidArgument("the re-run plan is not in canonical form");
  return plan;
}

StatusOr<RunPlan> StoredRunPlan(const RunMetadata& meta) {
  auto it = meta.extra.find(kRerunPlanKey);
  if (it == meta.extra.end()) return NotFound("it was recorded before re-run plans (no rerun.plan row)");
  auto plan = DecodeRunPlan(it->second);
  if (!plan.ok()) return InvalidArgument("its rerun.plan row is malformed: " + plan.status().message());
  return plan;
}

bool PlanHoldsRedaction(const RunPlan& plan) {
  for (const std::string& a : plan.argv) {
    if (HoldsRedaction(a)) return true;
  }
  for (const auto& [k, v] : plan.env) {
    if (HoldsRedaction(k) || HoldsRedaction(v)) return true;
  }
  return HoldsRedaction(plan.cwd);
}

std::string DescribeRunPlan(const RunPlan& plan) {
  std::string out;
  if (!plan.cwd.empty()) out += "cd " + ShellQuoteArgv({plan.cwd}) + " && ";
  if (!plan.env.empty()) {
    std::vector<std::string> words{"env"};
    for (const auto& [k, v] : plan.env) words.push_back(k + "=" + v);
    out += ShellQuoteArgv(words) + " ";
  }
  return out + ShellQuoteArgv(plan.argv);
}

}  // namespace magneton
