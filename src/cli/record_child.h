// Runs a program under recording: shared by `record` and `demo`.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace magneton::cli {

struct RecordRequest {
  std::string output;
  std::string label;
  std::vector<std::string> command;
  bool values = false;  // fingerprint tensor values (record --values)
  std::map<std::string, std::string> extra_env;  // for the program, e.g. overrides
  std::string cwd;                               // "" : ours
};

// Returns the program's exit code (or 1 if it could not be started or left
// no trace); prints one line on what was recorded.
int RecordChild(const RecordRequest& req, bool verbose);

}  // namespace magneton::cli
