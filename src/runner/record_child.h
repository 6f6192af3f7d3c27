// Runs a program under recording (`magneton record`): the bootstrap on
// PYTHONPATH, the trace path and options in the environment.
#pragma once

#include "magneton/process_runner.h"
#include "magneton/status.h"

namespace magneton::runner {

// Records request.argv into request.output (see ProcessRunner::Record).
StatusOr<RecordRunResult> RecordChild(const RecordRunRequest& request);

}  // namespace magneton::runner
