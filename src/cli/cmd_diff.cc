// magneton diff a.mtrace b.mtrace: where one run spends more energy than the
// other for the same results, and why (method.md sections 6 and 7). The work
// is the analysis session's; this file parses arguments and prints.
#include <cstdio>
#include <optional>

#include "analysis/job_diff.h"
#include "cli/command.h"
#include "cli/path_list.h"
#include "cli/text_file.h"
#include "magneton/analysis.h"
#include "runner/process_runner.h"
#include "trace/job_manifest.h"

namespace magneton::cli {
namespace {

class DiffCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("diff", "Flag regions where one run wastes energy, and diagnose why");
    sub->add_option("a", path_a_,
                    "First side's trace (recorded with --values); several recordings of it comma-separated "
                    "(a1,a2,a3) give every finding an interval over the runs")
        ->required();
    sub->add_option("b", path_b_, "Second side's trace(s), as many as the first, paired in order")->required();
    sub->add_option("--tau", options_.tau, "Relative energy difference that counts")
        ->default_val(defaults::kTau)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--epsilon", options_.epsilon,
                    "Tensor equivalence tolerance, for matching and for comparing region outputs")
        ->default_val(defaults::kEpsilon)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--min-share", options_.min_share,
                    "Findings that save less than this share of the job's energy are `small`, not flagged (the "
                    "setting the case suite is scored at; 0 flags every difference beyond tau)")
        ->default_val(defaults::kMinShare)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--min-same-work-share", options_.min_same_work_share,
                    "Noise floor of findings where both sides run the same ops on the same shapes (timing is "
                    "their only evidence): below this share of the job they are equal")
        ->default_val(defaults::kMinSameWorkShare)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--domain", options_.domain, "Energy domain (default: the largest one both traces have)");
    sub->add_option("--source-root", options_.source_roots,
                    "A folder report snippets may be read from besides the current directory (repeatable; not / or "
                    "$HOME); a trace's own recorded folders count only when it is your signed recording");
    sub->add_option("--json", json_path_, "Also write the report as JSON (docs/REPORT_FORMAT.md)");
    sub->add_option("--html", html_path_, "Also write a self-contained HTML report");
    sub->add_flag("--confirm", confirm_,
                  "Re-run the wasteful side with the top suspected variable set to the other side's value, "
                  "and report the measured saving (or that the hypothesis failed)");
    sub->add_flag("--no-rerun", no_rerun_,
                  "Do not re-run the two recorded commands with the deviation-point function traced line by line "
                  "(by default diff does, once, for the top finding, when both traces carry a command line)");
    sub->add_flag("--rerun", rerun_policy_.allow_foreign,
                  "Re-run recorded commands (the line-level step, --confirm) even of traces this user did not record "
                  "on this machine: a trace's command line is code, run it only if you trust the trace");
    sub->add_option("--confirm-min-saving", confirm_min_saving_, "Relative saving that confirms")->default_val(0.05);
    sub->add_option("--confirm-runs", confirm_runs_,
                    "Re-runs of each kind --confirm makes (as recorded, and flipped), interleaved; each counts by its "
                    "lowest")
        ->default_val(2)
        ->check(CLI::Range(1, 10));
    sub->add_flag("-v,--verbose", verbose_,
                  "Every finding's full evidence (energy, interval basis, op lists, call sites, deviation point, "
                  "line-trace chain, candidates), not the terse lines");
    return sub;
  }

  int Run() override {
    auto job_a = FindJobManifest(path_a_), job_b = FindJobManifest(path_b_);
    if (job_a || job_b) return RunJobs(job_a, job_b);
    // What --confirm re-runs is part of its result (stdout); the rest is
    // progress (stderr).
    options_.progress = [](const std::string& line) {
      if (line.rfind("--confirm:", 0) == 0) {
        std::printf("\n%s\n", line.c_str());
        std::fflush(stdout);
      } else {
        std::fprintf(stderr, "magneton: %s\n", line.c_str());
      }
    };
    auto session = AnalysisSession::OpenRuns(SplitCommas(path_a_), SplitCommas(path_b_), options_);
    if (!session.ok()) return Fail(session.status().message());
    Status st = (*session)->Diff();
    if (!st.ok()) return Fail(st.message());
    runner::SubprocessRunner processes;
    if (!no_rerun_) {
      st = (*session)->TraceLines(processes, rerun_policy_);
      if (!st.ok()) return Fail(st.message());
    }
    for (const std::string& note : (*session)->notes()) std::printf("note: %s\n", note.c_str());
    std::fputs((*session)->TerminalReport(verbose_).c_str(), stdout);
    if (!json_path_.empty()) {
      st = WriteTextFile(json_path_, (*session)->JsonReport());
      if (!st.ok()) return Fail(st.message());
    }
    if (!html_path_.empty()) {
      st = WriteTextFile(html_path_, (*session)->HtmlReport());
      if (!st.ok()) return Fail(st.message());
    }
    if (!confirm_) return 0;
    std::fflush(stdout);
    auto outcome = (*session)->Confirm(processes, rerun_policy_, confirm_min_saving_, confirm_runs_);
    if (!outcome.ok()) return Fail(outcome.status().message());
    if (!outcome->ran) {
      std::printf("\n--confirm: %s\n", outcome->sentence.c_str());
      return 0;
    }
    std::printf("%s\n(re-run trace: %s)\n", outcome->sentence.c_str(), outcome->trace_path.c_str());
    return 0;
  }

 private:
  // Two distributed jobs: rank with rank (analysis/job_diff.h).
  int RunJobs(const std::optional<std::string>& job_a, const std::optional<std::string>& job_b) {
    if (!job_a || !job_b) {
      return Fail("diff compares a job with a job and a trace with a trace; " + (job_a ? path_b_ : path_a_) +
                  " is not a job (a job is named by its manifest, job.mjob, or the name given to record)");
    }
    if (confirm_ || !json_path_.empty() || !html_path_.empty()) {
      return Fail("--confirm, --json and --html work on two traces; diff two ranks' traces for them");
    }
    auto diff = analysis::DiffJobs(*job_a, *job_b, options_, [](const std::string& line) {
      std::fprintf(stderr, "magneton: %s\n", line.c_str());
    });
    if (!diff.ok()) return Fail(diff.status().message());
    std::fputs(analysis::FormatJobDiff(*diff).c_str(), stdout);
    return 0;
  }

  std::string path_a_, path_b_, json_path_, html_path_;
  bool verbose_ = false;
  bool confirm_ = false;
  bool no_rerun_ = false;
  double confirm_min_saving_ = 0.05;
  size_t confirm_runs_ = 2;
  AnalysisOptions options_;
  RerunPolicy rerun_policy_;
};

}  // namespace

std::unique_ptr<Command> MakeDiffCommand() { return std::make_unique<DiffCommand>(); }

}  // namespace magneton::cli
