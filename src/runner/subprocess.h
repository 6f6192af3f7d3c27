// Running the traced program and finding the Python side of magneton.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace magneton::runner {

// Runs argv with extra environment variables, waits, and returns its exit
// code (128 + signal number if it was killed), or -1 if it could not start.
// With a log_path, the child's stdout and stderr go to that file (truncated).
int RunChild(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
             std::string* error, const std::string& cwd = "", const std::string& log_path = "");

// The Python interpreter to use for the demo: the one next to this
// executable (a venv's bin), else python3 on PATH.
std::string FindPython();

// Directory holding magneton's sitecustomize bootstrap, as seen by `python`.
std::optional<std::string> FindBootstrapDir(const std::string& python, std::string* error);

// Runs a command and captures its stdout (for small queries).
std::optional<std::string> CaptureOutput(const std::vector<std::string>& argv);

// Runs a command to completion with its stdout and stderr merged into
// `output` (when given); returns its exit code, -1 if it could not start.
int RunCapture(const std::vector<std::string>& argv, std::string* output);

}  // namespace magneton::runner
