// --confirm's re-run: the wasteful side's recorded command, recorded again
// with the suspected variable set to the efficient side's value.
#pragma once

#include <map>
#include <string>

#include "diagnose/counterfactual.h"
#include "magneton/process_runner.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// The recording request for `plan` on the wasteful run `wasteful` (recorded
// at `wasteful_path`): its command line and working directory, with
// MAGNETON_OVERRIDES (JSON, read by the Python hooks) and, for an environment
// variable, the variable itself — written into the command line instead when
// the command sets it itself (`env NAME=0 python ...`).
RecordRunRequest ConfirmRequest(const diagnose::Counterfactual& plan, const Trace& wasteful,
                                const std::string& wasteful_path);

// The control for that re-run: the same command as recorded, no override,
// recorded right before it. The flipped run is compared with the control,
// not with the original recording: on a shared machine a run minutes later
// can be 1.5-2x slower as a whole, which would hide (or fake) the saving.
RecordRunRequest ControlRequest(const Trace& wasteful, const std::string& wasteful_path);

}  // namespace magneton::analysis
