// Run-to-run spread of the evaluation (issue 14): one full run's F1 is not a
// measurement, so `magneton eval --spread-with earlier.json,...` puts this
// run beside earlier runs' --json output on the results page: the lowest F1
// over the tolerance range, the headline counts, and which case was missed
// or called waste in which run.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "eval/eval.h"
#include "magneton/status.h"

namespace magneton::eval {

// The tolerance range the suite's F1 target is stated over (issue 14: F1 >=
// 0.9 at every epsilon in [1e-5, 5e-2]).
inline constexpr double kSpreadEpsilonLow = 1e-5;
inline constexpr double kSpreadEpsilonHigh = 5e-2;

// What one full run scored, read from its magneton.eval/1 JSON.
struct RunSummary {
  std::string source;  // the JSON file, or "this run"
  std::string date;
  double headline_epsilon = 0, headline_tau = 0;
  Counts headline;             // at the headline setting
  double min_f1_at_tau = 0;    // lowest F1 over epsilon in the range, at the headline tau
  double min_f1_any_tau = 0;   // lowest F1 over epsilon in the range and every tau
  double worst_epsilon = 0;    // where min_f1_at_tau is reached
  std::vector<std::string> missed;           // positives not detected at the headline setting
  std::vector<std::string> false_positives;  // controls with waste at the headline setting
  std::vector<std::string> scored_cases;     // ran and scored (not skipped, not failed)
};

// Reads one run's summary; an error names what is missing or malformed.
StatusOr<RunSummary> SummarizeRun(const nlohmann::json& eval_json, const std::string& source);
// Reads a --json file written by `magneton eval`.
StatusOr<RunSummary> ReadRunSummary(const std::string& path);

// The "Run-to-run spread" section of docs/EVALUATION.md; `runs` in the order
// they were made (this run last).
std::string RenderSpread(const std::vector<RunSummary>& runs);

}  // namespace magneton::eval
