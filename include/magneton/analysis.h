// The analysis session: one object per comparison of two runs. It loads both
// sides' traces and fingerprints once, chooses the energy domain once, and
// runs match -> detect -> diagnose -> line-level re-run -> counterfactual,
// starting programs only through the ProcessRunner it is given. `magneton
// diff`, `match`, `demo`, `eval` and `--confirm` all go through it, so every
// step sees the same traces, domain and results.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magneton/analysis_defaults.h"
#include "magneton/process_runner.h"
#include "magneton/status.h"

namespace magneton {

namespace analysis {
struct SessionData;  // the typed state of a session (src/analysis/session_data.h); not a stable API
}

// Defaults: magneton/analysis_defaults.h (the one definition the CLI, the
// Python bindings and eval take theirs from).
struct AnalysisOptions {
  double tau = defaults::kTau;                  // relative energy difference that counts
  double epsilon = defaults::kEpsilon;          // tensor equivalence tolerance (matching and region outputs)
  double max_slowdown = defaults::kMaxSlowdown;  // the cheaper side may be at most this much slower to be waste
  double min_share = defaults::kMinShare;       // findings saving less of the job than this are equal ("small")
  double min_same_work_share = defaults::kMinSameWorkShare;  // noise floor of findings whose only evidence is timing
  std::string domain;                // energy domain; "": the largest one both sides have
  bool leaf_ops = false;             // match innermost ops instead of top-level ops
  // Folders reports may read source snippets from besides the current
  // directory (`--source-root`); a trace's own recorded folders count only
  // when it verifies as this user's recording (docs/DIFF.md, "Source snippets").
  std::vector<std::string> source_roots;
  // Where the session says what it is doing: each re-run, and for runs of at
  // least `progress_min_ops` ops on a side each step of the analysis with
  // its seconds (reading each run, energy, matching, detection, diagnosis),
  // so a long diff is not silent and a small one says nothing. Called on the
  // caller's thread only. SetProgress replaces it.
  std::function<void(const std::string&)> progress;
  int64_t progress_min_ops = 200000;
};

// Whether a re-run may start a command a trace names (docs/DIFF.md, "Re-runs").
struct RerunPolicy {
  // Run commands of traces this user did not record on this machine too
  // (`--rerun`); otherwise such a command is printed, never run.
  bool allow_foreign = false;
};

struct ConfirmOutcome {
  bool ran = false;        // false: nothing to re-run (reason in `sentence`)
  bool confirmed = false;  // the re-run saved at least the threshold
  std::string sentence;    // what happened, for the user
  std::string trace_path;  // the re-run's trace
};

class AnalysisSession {
 public:
  // Each side: one trace per model input, the same inputs in the same order
  // on both sides. Every trace must carry value fingerprints (record --values).
  static StatusOr<std::unique_ptr<AnalysisSession>> Open(const std::vector<std::string>& traces_a,
                                                         const std::vector<std::string>& traces_b,
                                                         const AnalysisOptions& options = {});
  // Each side: repeated recordings of the same program (paired in order, A1
  // with B1: record them interleaved). Detection gives every finding an
  // interval over the runs (docs/DIFF.md, "Uncertainty").
  static StatusOr<std::unique_ptr<AnalysisSession>> OpenRuns(const std::vector<std::string>& runs_a,
                                                             const std::vector<std::string>& runs_b,
                                                             const AnalysisOptions& options = {});
  // Over runs already loaded (data->a, data->b and data->options set): for
  // tests and the Python analysis module.
  static StatusOr<std::unique_ptr<AnalysisSession>> FromData(std::unique_ptr<analysis::SessionData> data);
  ~AnalysisSession();

  // Matching only (`magneton match`).
  Status Match();
  // Match, detect, diagnose.
  Status Diff();
  // The line-level step (docs/DIFF.md) for the top finding with a deviation
  // point: one re-run of each side with that function traced line by line.
  // Its outcome is part of that finding's diagnosis; a re-run that cannot or
  // may not happen is noted there, and is not an error.
  Status TraceLines(ProcessRunner& runner, const RerunPolicy& policy);
  // --confirm: re-record the wasteful side with the top suspected variable
  // set to the other side's value and compare their job energy in the
  // session's domain.
  // `runs` re-runs of each kind (as recorded, flipped), interleaved; each
  // kind counts by its lowest job energy (docs/DIFF.md, "--confirm").
  StatusOr<ConfirmOutcome> Confirm(ProcessRunner& runner, const RerunPolicy& policy, double min_saving,
                                   size_t runs = 2);

  // The diff's renderings (after Diff()); the JSON schema is
  // docs/REPORT_FORMAT.md.
  // verbose: every finding's full evidence, not the terse lines.
  std::string TerminalReport(bool verbose = false) const;
  std::string JsonReport() const;
  std::string HtmlReport() const;

  // AnalysisOptions::progress, after opening; default: nowhere.
  void SetProgress(std::function<void(const std::string&)> progress);

  const std::string& domain() const;
  // What loading changed about the runs compared (windows trimmed to equal step counts), for the reader.
  const std::vector<std::string>& notes() const;
  const AnalysisOptions& options() const;
  const analysis::SessionData& data() const { return *data_; }
  analysis::SessionData& mutable_data() { return *data_; }

 private:
  explicit AnalysisSession(std::unique_ptr<analysis::SessionData> data);
  void Say(const std::string& line) const;
  std::unique_ptr<analysis::SessionData> data_;
};

}  // namespace magneton
