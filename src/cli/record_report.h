// What `record` (and the commands that record) print about a recording.
#pragma once

#include "magneton/process_runner.h"
#include "magneton/status.h"

namespace magneton::cli {

// One line on stderr ("recorded N ops ...", or what went wrong) and the exit
// code to use: the program's own (128 + signal when killed), 1 when it could
// not start or left no readable trace and exited 0.
int ReportRecording(const RecordRunRequest& request, const StatusOr<RecordRunResult>& result);

}  // namespace magneton::cli
