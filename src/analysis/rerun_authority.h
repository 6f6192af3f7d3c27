// Whether a trace may make the analysis start the command it names
// (docs/DIFF.md, "Which traces are re-run"): only a trace this user recorded
// on this machine (its signature verifies, src/trust/), or any trace when the
// user asked with --rerun.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "magneton/analysis.h"
#include "magneton/trace.h"

namespace magneton::analysis {

using Say = std::function<void(const std::string&)>;

// Checks every side (its path, for messages, and its trace) before `step`
// ("the line-level step", "--confirm"). Says on `say`, for each side that is
// not trusted, why, and — when it refuses — exactly what would run
// (`would_run`) and how to allow it. Returns "" when every side may be
// re-run, else the reason for the report.
std::string RefuseUntrusted(const std::vector<std::pair<std::string, const Trace*>>& sides, const std::string& step,
                            const std::string& would_run, const RerunPolicy& policy, const Say& say);

// The last door before a command is handed to the runner: false for a trace
// that is not trusted under `policy`, `why` then says why.
bool MayRerun(const Trace& trace, const RerunPolicy& policy, std::string* why);

// "  for <path>, in <cwd>, /bin/sh -c runs:\n    <command>" per side.
std::string WouldRun(const std::vector<std::pair<std::string, const Trace*>>& sides);

}  // namespace magneton::analysis
