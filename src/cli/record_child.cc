#include "cli/record_child.h"

#include <cstdlib>
#include <filesystem>

#include "cli/command.h"
#include "cli/subprocess.h"
#include "magneton/trace_reader.h"

namespace magneton::cli {

int RecordChild(const RecordRequest& req, bool verbose) {
  if (req.command.empty()) return Fail("record needs a command to run, e.g. magneton record -- python script.py");
  std::string python = req.command[0];
  if (std::filesystem::path(python).filename().string().rfind("python", 0) != 0) python = FindPython();
  std::string error;
  auto bootstrap = FindBootstrapDir(python, &error);
  if (!bootstrap) return Fail(error);

  std::error_code ec;
  std::filesystem::path out = std::filesystem::absolute(req.output, ec);
  std::filesystem::remove(out, ec);  // never mistake an old trace for this run's
  std::map<std::string, std::string> env = {
      {"MAGNETON_RECORD_PATH", out.string()},
      {"MAGNETON_RECORD_LABEL", req.label},
      {"MAGNETON_COMMAND_LINE", ShellQuote(req.command)},
      {"MAGNETON_RECORD_VALUES", req.values ? "1" : "0"},
  };
  for (const auto& [k, v] : req.extra_env) env[k] = v;
  const char* old_path = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = *bootstrap + (old_path && *old_path ? std::string(":") + old_path : std::string());

  int code = RunChild(req.command, env, &error, req.cwd);
  if (code < 0) return Fail(error);

  if (!std::filesystem::exists(out, ec)) {
    Fail("'" + req.command[0] + "' exited with code " + std::to_string(code) +
         " and wrote no trace (is it a Python program that imports torch?)");
    return code != 0 ? code : 1;
  }
  auto trace = ReadTrace(out.string());
  if (!trace.ok()) {
    Fail("the trace " + out.string() + " cannot be read: " + trace.status().message());
    return code != 0 ? code : 1;
  }
  if (code != 0) {
    Fail("'" + req.command[0] + "' exited with code " + std::to_string(code) + "; " + out.string() + " keeps the " +
         std::to_string(trace->ops.size()) + " ops recorded before that");
    return code;
  }
  if (verbose) {
    std::fprintf(stderr, "magneton: recorded %zu ops and %zu tensors to %s\n", trace->ops.size(),
                 trace->tensors.size(), out.string().c_str());
  }
  return 0;
}

}  // namespace magneton::cli
