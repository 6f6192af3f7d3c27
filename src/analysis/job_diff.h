// `magneton diff jobA jobB`: the ranks of two distributed jobs paired rank
// with rank, each pair through the same matching and diagnosis as two runs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "magneton/analysis.h"
#include "magneton/status.h"
#include "trace/job_manifest.h"

namespace magneton::analysis {

struct RankPair {
  int rank = -1;
  std::string trace_a, trace_b;
};

struct JobPairing {
  std::vector<RankPair> pairs;           // ranks both jobs recorded readably
  std::vector<std::string> left_out;     // why a rank is not compared ("rank 1: only in A", unreadable, ...)
};

// Pairs rank k of A with rank k of B.
StatusOr<JobPairing> PairJobRanks(const std::string& manifest_a, const std::string& manifest_b);

struct RankDiff {
  int rank = -1;
  std::string report;      // the pair's terminal report, or why it could not be diffed
  bool ok = false;
  double job_uj_a = 0, job_uj_b = 0;  // job energy in the pair's domain
  std::string domain;
};

struct JobDiff {
  JobPairing pairing;
  std::vector<RankDiff> ranks;
  double total_uj_a = 0, total_uj_b = 0;  // over the diffed ranks
};

// Diffs every paired rank; a pair that fails is reported, not fatal.
StatusOr<JobDiff> DiffJobs(const std::string& manifest_a, const std::string& manifest_b,
                           const AnalysisOptions& options, const std::function<void(const std::string&)>& progress);

std::string FormatJobDiff(const JobDiff& diff);

}  // namespace magneton::analysis
