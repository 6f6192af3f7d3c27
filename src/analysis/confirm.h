// --confirm's re-run: the wasteful side's stored re-run plan
// (trace/rerun_plan.h), recorded again with the suspected variable set to the
// efficient side's value — only a variable and value the rules validated
// (diagnose/override_rules.h).
#pragma once

#include <string>

#include "diagnose/counterfactual.h"
#include "magneton/process_runner.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// The recording request for `flip` on the wasteful run's plan `plan` (its
// trace at `wasteful_path`): the plan's argv, cwd and environment, with
// MAGNETON_OVERRIDES (JSON, read and checked again by the Python hooks) and,
// for an environment variable, the variable itself — and when the argv sets
// it itself (`env NAME=0 python ...`), that argv element replaced whole by
// NAME=<new>. Never a string splice, never a shell.
RecordRunRequest ConfirmRequest(const diagnose::Counterfactual& flip, const RunPlan& plan,
                                const std::string& wasteful_path);

// The control for that re-run: the same plan as recorded, no override,
// recorded right before it. The flipped run is compared with the control,
// not with the original recording: on a shared machine a run minutes later
// can be 1.5-2x slower as a whole, which would hide (or fake) the saving.
RecordRunRequest ControlRequest(const RunPlan& plan, const std::string& wasteful_path);

// What the user could run by hand for a flip --confirm does not make: the
// plan (or, without one, the recorded command line) shell-quoted, with the
// change said beside it. Display only.
std::string FlipForUser(const diagnose::Counterfactual& flip, const Trace& wasteful);

}  // namespace magneton::analysis
