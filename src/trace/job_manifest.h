// The manifest of a distributed job (`<stem>.mjob`, docs/TRACE_FORMAT.md
// "Job manifest"): which rank traces make up one `magneton record` of a
// torchrun / torch.multiprocessing job, and how each rank's process ended.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "magneton/status.h"

namespace magneton {

struct RankEntry {
  int rank = -1;
  int local_rank = -1;
  std::string trace;  // file name, in the manifest's folder
  std::string host;
  int64_t pid = 0;
  std::string backend;  // "gloo", "nccl"; "" when the rank never joined a process group
  // How the rank's process ended, as its launcher saw it; unknown when the
  // launcher did not reap it (it was killed itself).
  std::optional<int> exit_code;  // set when it exited
  int signal = 0;                // > 0: killed by this signal
  std::string trace_error;       // "" when the trace reads; else why not
  size_t ops = 0;
};

struct JobManifest {
  int world_size = 0;
  std::string backend;
  std::string command_line;
  int launcher_exit_code = 0;   // of the recorded command (128 + signal when killed)
  std::string launcher_trace;   // the root process's own trace when it ran ops; "" otherwise
  std::vector<RankEntry> ranks;  // by rank
};

// "job.mtrace" -> "job"; any other name is its own stem.
std::string JobStem(const std::string& base_path);
std::string JobManifestPath(const std::string& base_path);  // <stem>.mjob
std::string RankTracePath(const std::string& base_path, int rank);  // <stem>.rank<N>.mtrace

// The manifest a command-line argument names: the .mjob itself, a stem
// ("job"), or the base trace path given to record ("job.mtrace"); nullopt
// when there is none (the argument is a plain trace).
std::optional<std::string> FindJobManifest(const std::string& arg);

// "killed by SIGKILL", "exit code 1", "exit status unknown", "exited normally".
std::string DescribeRankEnd(const RankEntry& rank);

Status WriteJobManifest(const std::string& path, const JobManifest& manifest);
StatusOr<JobManifest> ReadJobManifest(const std::string& path);
// The folder holding the manifest, to resolve RankEntry::trace against.
std::string RankTracePathIn(const std::string& manifest_path, const RankEntry& rank);

}  // namespace magneton
