// The typed state of an AnalysisSession (include/magneton/analysis.h): what
// it loaded and what each step produced. Internal: the CLI, eval and the
// Python analysis module read it; it is not a stable API.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "detect/detect.h"
#include "diagnose/diagnose.h"
#include "energy/attribution.h"
#include "fingerprint/fingerprint_map.h"
#include "magneton/analysis.h"
#include "magneton/trace.h"
#include "match/match.h"
#include "report/diff_report.h"

namespace magneton::analysis {

struct LoadedRun {
  std::string path;  // as given
  Trace trace;
  FingerprintMap fingerprints;
};

// A further recording of each side's program (OpenRuns), paired by index.
struct RepeatPair {
  LoadedRun a, b;
  energy::Attribution energy_a, energy_b;
};

struct SessionData {
  AnalysisOptions options;
  // One run per model input on each side, in the same order; energy and
  // detection use the first pair.
  std::vector<LoadedRun> a, b;
  std::string domain;  // chosen once (ChooseDomain); every step uses it
  // Filled by Attribute(), which the steps that compare energy call first
  // (after matching, which needs none).
  energy::Attribution energy_a, energy_b;
  Status energy_status;  // why there is no domain or attribution, if so
  bool energy_attributed = false;
  // Recordings 2..N per side when the session compares repeated runs
  // (`diff a1,a2 b1,b2`); detection combines them (detect::CombineRuns).
  std::vector<RepeatPair> repeats;
  std::optional<MatchResult> match;
  std::vector<MatchResult> repeat_matches;  // one per repeats entry, with match
  std::optional<detect::DetectResult> detection;
  std::vector<diagnose::Diagnosis> diagnoses;
  // Where report snippets come from (analysis/source_access.h); it notes the
  // files read, which the reports list.
  diagnose::SourceRoots source_roots;
  // What loading changed about the runs compared (step_window.h), for the reader.
  std::vector<std::string> notes;

  const Trace& trace_a() const { return a.front().trace; }
  const Trace& trace_b() const { return b.front().trace; }
  // At least one run of AnalysisOptions::progress_min_ops ops: the steps say what they did.
  bool long_runs() const;
  // "<what> (<time since since_ns>)" through options.progress, for long runs only.
  void SayStep(const std::string& what, int64_t since_ns) const;
  // Attributes every run's energy in `domain` once; energy_status after.
  Status Attribute();
  // The session's options as each stage takes them.
  MatchOptions match_options() const;
  detect::Options detect_options() const;
  // For the renderings; needs detection.
  report::DiffReportInput report_input() const;
};

// The steps, on given options (eval sweeps them over one loaded session).
StatusOr<MatchResult> MatchRuns(const SessionData& data, const MatchOptions& options);
StatusOr<std::vector<MatchResult>> MatchRepeats(const SessionData& data, const MatchOptions& options);
// Detection on the first pair, combined with the repeats' when there are.
StatusOr<detect::DetectResult> DetectRuns(const SessionData& data, const MatchResult& match,
                                          const std::vector<MatchResult>& repeat_matches,
                                          const detect::Options& options);

}  // namespace magneton::analysis
