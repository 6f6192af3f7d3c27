// Whether a trace may make the analysis start the command it names
// (docs/DIFF.md, "Which traces are re-run"): only a trace with a re-run plan
// (trace/rerun_plan.h) holding no redacted part, and only when this user
// recorded it on this machine (its signature, which covers the plan whole,
// verifies: src/trust/) or the user asked with --rerun. What runs is the
// stored plan as argv — never the display string `command_line`, never a shell.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "magneton/analysis.h"
#include "magneton/process_runner.h"
#include "magneton/trace.h"

namespace magneton::analysis {

using Say = std::function<void(const std::string&)>;

// The plan a re-run of `trace` executes, or why it never re-runs, --rerun or
// not: recorded before re-run plans, a malformed plan, or a plan holding a
// redacted part (it cannot reproduce the run).
StatusOr<RunPlan> RerunnablePlan(const Trace& trace);

// Checks every side (its path, for messages, and its trace) before `step`
// ("the line-level step", "--confirm"). Says on `say`, for each side that may
// not be re-run, why, and — when it refuses — exactly what would run
// (`would_run`) and how to run it. Returns "" when every side may be re-run,
// else the reason for the report.
std::string RefuseUntrusted(const std::vector<std::pair<std::string, const Trace*>>& sides, const std::string& step,
                            const std::string& would_run, const RerunPolicy& policy, const Say& say);

// The last door before a plan is handed to the runner: the trace's plan, or
// PermissionDenied / FailedPrecondition saying why it is not re-run.
StatusOr<RunPlan> PlanToRerun(const Trace& trace, const RerunPolicy& policy);

// "  for <path>:\n    cd <cwd> && <argv, shell-quoted>" per side (the
// recorded command line for a side without a usable plan).
std::string WouldRun(const std::vector<std::pair<std::string, const Trace*>>& sides);

}  // namespace magneton::analysis
