// How the analysis starts programs: the line-level re-run, --confirm's
// recording with an override, A/B recordings, the case suite. An interface,
// so that the analysis never spawns anything itself and tests script it.
// The CLI's implementation is runner/process_runner.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "magneton/status.h"

namespace magneton {

// What a re-run (or any run the analysis starts) executes: one structured
// record, never a shell line (docs/DIFF.md, "Which traces are re-run"). A
// recording stores the plan it was started with as the meta row `rerun.plan`
// (trace/rerun_plan.h), signed whole; re-runs are built from that row only.
struct RunPlan {
  std::vector<std::string> argv;           // the program and its arguments, run by execvp
  std::string cwd;                         // "": the caller's
  std::map<std::string, std::string> env;  // set on top of the caller's environment
  std::string interpreter;                 // the Python that recorded it, for the record; "" unknown

  bool operator==(const RunPlan&) const = default;
};

struct RunRequest {
  RunPlan plan;
  std::string log_path;                    // stdout and stderr go here; "": the caller's
  // Put magneton's Python bootstrap on PYTHONPATH (the line tracer runs there).
  bool with_python_hooks = false;
};

struct RecordRunRequest {
  RunPlan plan;                            // what runs (argv, cwd, environment changes)
  std::string output;                      // the trace file to write
  std::string label;
  bool values = false;                     // fingerprint tensor values (record --values)
  std::string log_path;                    // the program's output goes here; "": the caller's
};

struct RecordRunResult {
  int exit_code = 0;  // 128 + signal when it was killed
  // Ok when the program left a readable trace; otherwise why there is none.
  Status trace_status;
  size_t ops = 0;  // what the readable trace holds
  size_t tensors = 0;
  // How often, and how long in all, the program waited for the trace writer
  // to take a full pending batch (meta trace.backpressure_*; 0 for traces
  // that do not say).
  int64_t writer_waits = 0;
  int64_t writer_wait_ms = 0;
  // Children the program forked while it was recorded (meta
  // recorder.forked_children): their ops are not in the trace.
  int64_t forked_children = 0;
  // What became of GPU device activity (meta gpu.*): "off: <why>",
  // "not recorded: <error>", "<N> device activities ..."; "" when the trace
  // does not say (no torch).
  std::string gpu_note;
  // A distributed job (its ranks recorded traces of their own): the job
  // manifest's path (docs/TRACE_FORMAT.md "Job manifest"); "" otherwise.
  std::string job_manifest;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Runs to completion: the exit code (128 + signal when killed), or an
  // error when it could not start.
  virtual StatusOr<int> Run(const RunRequest& request) = 0;
  // Records the program into request.output: an error when it could not
  // start; otherwise its exit code and whether it left a readable trace (a
  // program that failed midway still leaves the ops recorded before).
  virtual StatusOr<RecordRunResult> Record(const RecordRunRequest& request) = 0;
};

}  // namespace magneton
