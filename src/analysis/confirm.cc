#include "analysis/confirm.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "trace/rerun_plan.h"

namespace magneton::analysis {
namespace {

bool IsEnvFlip(const diagnose::Counterfactual& flip) {
  return flip.variable.source == "env" && flip.variable.key.rfind("env.", 0) == 0;
}

// `env [NAME=value ...] program ...`: the argv elements that set variables.
// True when one set `name` (it now sets `value`).
bool ReplaceEnvAssignment(std::vector<std::string>* argv, const std::string& name, const std::string& value) {
  if (argv->empty() || std::filesystem::path((*argv)[0]).filename().string() != "env") return false;
  bool replaced = false;
  for (size_t k = 1; k < argv->size(); ++k) {
    std::string& word = (*argv)[k];
    if (word.rfind(name + "=", 0) == 0) {
      word = name + "=" + value;  // the element, whole
      replaced = true;
    }
    if (word.find('=') == std::string::npos && word.rfind("-", 0) != 0) break;  // the program
  }
  return replaced;
}

}  // namespace

RecordRunRequest ConfirmRequest(const diagnose::Counterfactual& flip, const RunPlan& plan,
                                const std::string& wasteful_path) {
  RecordRunRequest req;
  req.plan = plan;
  nlohmann::json overrides = nlohmann::json::array();
  overrides.push_back({{"key", flip.variable.key}, {"value", flip.new_value}, {"source", flip.variable.source}});
  // Trace text need not be UTF-8: invalid bytes become U+FFFD, not an exception.
  req.plan.env["MAGNETON_OVERRIDES"] = overrides.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (IsEnvFlip(flip)) {
    const std::string name = flip.variable.key.substr(4);
    req.plan.env[name] = flip.new_value;
    // A command that sets the variable itself would override ours.
    ReplaceEnvAssignment(&req.plan.argv, name, flip.new_value);
  }
  req.output = wasteful_path + ".confirm.mtrace";
  req.label = "confirm " + flip.variable.key + "=" + flip.new_value;
  return req;
}

RecordRunRequest ControlRequest(const RunPlan& plan, const std::string& wasteful_path) {
  RecordRunRequest req;
  req.plan = plan;
  req.output = wasteful_path + ".control.mtrace";
  req.label = "confirm control (as recorded)";
  return req;
}

std::string FlipForUser(const diagnose::Counterfactual& flip, const Trace& wasteful) {
  auto plan = StoredRunPlan(wasteful.meta);
  if (plan.ok() && IsEnvFlip(flip)) {
    const std::string name = flip.variable.key.substr(4);
    if (!ReplaceEnvAssignment(&plan->argv, name, flip.new_value)) plan->env[name] = flip.new_value;
    return "    " + DescribeRunPlan(*plan);
  }
  const std::string command = plan.ok() ? DescribeRunPlan(*plan) : wasteful.meta.command_line;
  return "    " + command + "\n  with " + flip.variable.key + " set to " + ShellQuoteArgv({flip.new_value}) +
         " in the program";
}

}  // namespace magneton::analysis
