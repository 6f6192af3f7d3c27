// `magneton show job`: the ranks of a distributed job side by side.
#pragma once

#include <string>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"
#include "trace/job_manifest.h"

namespace magneton {

struct RankSummary {
  int rank = -1;
  std::string end;          // DescribeRankEnd
  std::string trace_error;  // "" when the trace reads
  size_t ops = 0;
  int64_t job_ns = 0;       // first op's start to last op's end
  int64_t collective_ops = 0;  // outermost c10d:: ops (collectives, point-to-point)
  int64_t collective_ns = 0;   // their inclusive time
  int64_t collective_bytes = 0;  // the bytes their args say they were given (docs/TRACE_FORMAT.md "Collectives")
  int64_t collective_ops_without_bytes = 0;  // outermost c10d:: ops whose args carry no bytes (an older trace)
  std::string domain;       // the rank's largest energy domain; "" when none
  std::string provenance;   // "MEASURED" / "ESTIMATED"
  double job_uj = 0;        // energy over the job in that domain
};

// Per rank, from its trace (the trace is read by the caller: nullptr when unreadable).
RankSummary SummariseRank(const RankEntry& entry, const Trace* trace);

std::string FormatJobSummary(const std::string& manifest_path, const JobManifest& manifest,
                             const std::vector<RankSummary>& ranks);

// Reads the manifest and every rank trace it lists, and formats the summary.
StatusOr<std::string> SummariseJobFile(const std::string& manifest_path);

}  // namespace magneton
