// The counterfactual experiment behind `magneton diff --confirm`: re-run the
// wasteful side with the suspected variable set to the efficient side's
// value, and compare the energy of the two runs of that side.
#pragma once

#include <string>
#include <vector>

#include "detect/detect.h"
#include "diagnose/diagnose.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::diagnose {

// What to flip; how to re-run with it is the analysis session's business
// (src/analysis/confirm.cc).
struct Counterfactual {
  size_t finding_index = 0;
  char rerun_side = 'A';       // the wasteful side, re-run with the override
  ConfigDifference variable;   // key, value on each side, source
  std::string new_value;       // the efficient side's value
  // Non-empty: --confirm does not set this variable to this value (why, from
  // diagnose/override_rules.h); the command is printed for the user instead.
  std::string refused;
};

// The experiment for the top candidate of the finding whose cause the
// line-level re-run established (Diagnosis::line with a config key; a waste
// or trade-off finding), else of the top-ranked waste finding. Fails with a
// reason when there is no such finding, no candidate, or no value on the
// efficient side; a plan whose variable or value the rules refuse
// (override_rules.h) comes back with `refused` set.
StatusOr<Counterfactual> PlanCounterfactual(const Trace& a, const Trace& b, const detect::DetectResult& result,
                                            const std::vector<Diagnosis>& diagnoses);

struct CounterfactualOutcome {
  double before_uj = 0;  // the wasteful side re-run as recorded (the controls): the lowest job energy
  double after_uj = 0;   // the re-runs with the override: the lowest job energy
  size_t runs = 0;       // re-runs of each kind
  Provenance provenance = Provenance::kEstimated;
  std::string domain;
  bool confirmed = false;  // the re-run saves more than the threshold
  std::string sentence;
};

// Job energy of the wasteful side's re-runs in `domain` (the diff's):
// `controls` ran the command as recorded, `flipped` with the override,
// interleaved (control, flipped, control, flipped, ...). Each kind counts by
// its lowest job energy: a busy neighbour only ever adds to a run's cost, so
// the lowest of a few interleaved runs is the one least disturbed, and a
// load spike during one run cannot fake or hide the saving. Confirmed when
// the flipped runs use at least `min_saving` (relative) less.
StatusOr<CounterfactualOutcome> EvaluateCounterfactual(const Counterfactual& plan,
                                                       const std::vector<const Trace*>& controls,
                                                       const std::vector<const Trace*>& flipped,
                                                       const std::string& domain, double min_saving);

}  // namespace magneton::diagnose
