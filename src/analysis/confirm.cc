#include "analysis/confirm.h"

#include <nlohmann/json.hpp>

namespace magneton::analysis {

RecordRunRequest ConfirmRequest(const diagnose::Counterfactual& plan, const Trace& wasteful,
                                const std::string& wasteful_path) {
  std::string command_line = wasteful.meta.command_line;
  std::map<std::string, std::string> env;
  nlohmann::json overrides = nlohmann::json::array();
  overrides.push_back({{"key", plan.variable.key}, {"value", plan.new_value}, {"source", plan.variable.source}});
  env["MAGNETON_OVERRIDES"] = overrides.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (plan.variable.source == "env" && plan.variable.key.rfind("env.", 0) == 0) {
    const std::string name = plan.variable.key.substr(4);
    env[name] = plan.new_value;
    // A command that sets the variable itself (`env NAME=0 python ...`)
    // would override ours: set it there instead.
    const std::string old_value = plan.rerun_side == 'A' ? plan.variable.value_a : plan.variable.value_b;
    const std::string from = name + "=" + old_value;
    const size_t pos = command_line.find(from);
    const size_t end = pos + from.size();
    if (pos != std::string::npos && (pos == 0 || command_line[pos - 1] == ' ') &&
        (end == command_line.size() || command_line[end] == ' ')) {
      command_line.replace(pos, from.size(), name + "=" + plan.new_value);
    }
  }
  RecordRunRequest req;
  req.argv = {"/bin/sh", "-c", command_line};
  req.cwd = wasteful.meta.cwd;
  req.env = std::move(env);
  req.output = wasteful_path + ".confirm.mtrace";
  req.label = "confirm " + plan.variable.key + "=" + plan.new_value;
  return req;
}

RecordRunRequest ControlRequest(const Trace& wasteful, const std::string& wasteful_path) {
  RecordRunRequest req;
  req.argv = {"/bin/sh", "-c", wasteful.meta.command_line};
  req.cwd = wasteful.meta.cwd;
  req.output = wasteful_path + ".control.mtrace";
  req.label = "confirm control (as recorded)";
  return req;
}

}  // namespace magneton::analysis
