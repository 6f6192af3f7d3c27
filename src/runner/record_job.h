// After `magneton record` of a distributed job: gathers the traces the ranks
// wrote (python/magneton/_bootstrap/job.py) into a job manifest.
#pragma once

#include <optional>
#include <string>

#include "magneton/status.h"
#include "trace/job_manifest.h"

namespace magneton::runner {

// Looks for rank traces next to `base_path` (<stem>.rank<N>.mtrace, and
// <stem>.pid<PID>.mtrace of spawn children, renamed after their rank or
// removed when they never joined a process group), joins the exit status the
// root process saw for each (<stem>.exits.json, removed), and writes
// <stem>.mjob. The root's own trace is removed when it holds no op (a
// launcher such as torchrun). nullopt when no rank recorded: not a job.
StatusOr<std::optional<JobManifest>> CollectJob(const std::string& base_path, const std::string& command_line,
                                                int launcher_exit_code);

// Removes what an earlier record of the same base path left (rank traces,
// manifest), so that it is never mistaken for this run's.
void RemoveOldJob(const std::string& base_path);

}  // namespace magneton::runner
