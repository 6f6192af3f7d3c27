// When `magneton compare` records more pairs (docs/DIFF.md, "More runs when a
// verdict is undecided"): a verdict its interval left open. asv re-runs a
// benchmark that looks regressed before it reports; compare can do the same,
// since it recorded the programs itself.
#pragma once

#include <cstddef>
#include <string>

#include "analysis/job_compare.h"
#include "detect/detect.h"

namespace magneton::analysis {

struct Undecided {
  size_t findings = 0;  // inconclusive findings whose point estimate is waste or trade-off
  // The job's energy: beyond tau by the point estimate, not by its
  // interval, or by its interval only as far as the costlier side's busier
  // machine explains (JobCall::kInconclusive, kBusierCostsMore).
  bool job = false;
  bool any() const { return findings > 0 || job; }
  std::string Describe() const;  // "2 findings and the job energy", for the progress line
};

// `detection` may be null (compare without --values: the job only).
Undecided FindUndecided(const detect::DetectResult* detection, JobCall job);

// How many pairs to add: `more` (the --more-runs budget left) when anything
// is undecided, else none.
int PairsToAdd(const Undecided& undecided, int more);

}  // namespace magneton::analysis
