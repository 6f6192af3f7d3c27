// The energy-regression gate (`magneton gate`, docs/DIFF.md): a candidate's
// recordings against a baseline's. It fails only on a significant
// regression: the lower end of the interval on candidate/baseline energy is
// beyond the limit, for the job or for a matched region whose extra energy
// is at least the limit's share of the candidate's job (named with its root
// cause). One recording per side is never significant.
#pragma once

#include <string>
#include <vector>

#include "analysis/job_compare.h"
#include "magneton/analysis_defaults.h"
#include "magneton/status.h"

namespace magneton::analysis {

struct GateOptions {
  double max_regression = 0.05;  // candidate may cost this much more (relative) before it fails
  double confidence = 0.95;
  double epsilon = defaults::kEpsilon;  // tensor tolerance for region matching
  std::string domain;
};

enum class GateCheckState { kPass, kFail, kInconclusive };
const char* GateCheckStateName(GateCheckState state);  // "pass", "fail", "inconclusive"

// One thing the gate checked: the job, or a matched region.
struct GateCheck {
  std::string name;        // "job energy" or the region's first ops
  GateCheckState state = GateCheckState::kPass;
  double ratio = 1;        // candidate / baseline
  detect::Interval interval;
  std::string method;      // how the interval was made
  std::string message;     // one line: what and why
  std::string root_cause;  // the diagnosis sentence, for regions
};

struct GateResult {
  std::string domain;
  Provenance provenance = Provenance::kEstimated;
  size_t runs_baseline = 0, runs_candidate = 0;
  double mean_baseline_uj = 0, mean_candidate_uj = 0;
  std::vector<GateCheck> checks;  // the job first, then regressed regions
  std::string regions_note;       // why regions were not compared, if so
  bool failed() const;
};

// The job check: fail when the interval's lower end is beyond the limit,
// unless the candidate's runs had materially more of the machine taken by
// other work (the mean over runs) and that load alone could make its job as
// much costlier: then inconclusive, naming both loads (docs/DIFF.md "A busy
// machine"). A CI runner shared with other jobs must not fail a candidate
// for its neighbours.
GateCheck JobEnergyCheck(const JobComparison& job, const detect::MachineLoadShares& baseline_load,
                         const detect::MachineLoadShares& candidate_load, const GateOptions& options);

StatusOr<GateResult> RunGate(const std::vector<std::string>& baseline, const std::vector<std::string>& candidate,
                             const GateOptions& options);

// For a CI job summary ($GITHUB_STEP_SUMMARY) and test reporters.
std::string GateMarkdown(const GateResult& result, const GateOptions& options);
std::string GateJUnit(const GateResult& result, const GateOptions& options);
std::string GateTerminal(const GateResult& result, const GateOptions& options);

}  // namespace magneton::analysis
