// magneton compare -n N [--values] -- CMD_A ... -- CMD_B ...: records both
// programs N times interleaved (A B A B), then compares their job energy with
// an interval over the runs and, with --values, diffs them region by region
// with the same statistics (docs/DIFF.md, "Uncertainty").
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "analysis/ab_record.h"
#include "analysis/job_compare.h"
#include "analysis/more_runs.h"
#include "analysis/session_data.h"
#include "base/format.h"
#include "cli/command.h"
#include "cli/text_file.h"
#include "magneton/analysis.h"
#include "runner/process_runner.h"

namespace magneton::cli {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One line on a terminal redrawn in place; one line per step elsewhere (CI logs).
void ShowProgress(const analysis::AbProgress& p) {
  const bool tty = isatty(fileno(stderr)) != 0;
  constexpr int kWidth = 20;
  const int filled = p.total ? kWidth * p.done / p.total : 0;
  const std::string bar = std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '-');
  const std::string eta = p.eta_s < 0 ? "ETA --" : fmt::format("ETA {:.0f} s", p.eta_s);
  const std::string what = p.current.empty() ? "done" : "recording " + p.current;
  std::fprintf(stderr, "%s[%s] %d/%d %s, %.0f s elapsed, %s%s", tty ? "\r" : "", bar.c_str(), p.done, p.total,
               what.c_str(), p.elapsed_s, eta.c_str(), tty && !p.current.empty() ? "   " : "\n");
  std::fflush(stderr);
}

class CompareCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand(
        "compare", "Record two programs N times each, interleaved, and compare them with an interval over the runs");
    sub->add_option("-n,--runs", runs_, "Recordings per side")->default_val(3)->check(CLI::Range(1, 50));
    sub->add_option("--more-runs", more_runs_,
                    "Pairs recorded more, once, when a verdict's interval straddles tau (default: as many as -n; 0: "
                    "none)")
        ->check(CLI::Range(-1, 50));
    sub->add_flag("-v,--verbose", verbose_, "Every finding's full evidence in the diff, not the terse lines");
    sub->add_flag("--values", values_,
                  "Fingerprint tensor values and diff region by region (otherwise only job energy is compared)");
    sub->add_option("--out-dir", out_dir_, "Where the traces and the programs' output go")
        ->default_val("magneton-compare");
    sub->add_option("--tau", options_.tau, "Relative energy difference that counts")
        ->default_val(defaults::kTau)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--epsilon", options_.epsilon, "Tensor equivalence tolerance")->default_val(defaults::kEpsilon);
    sub->add_option("--domain", options_.domain, "Energy domain (default: the largest one both traces have)");
    sub->add_option("--json", json_path_, "Also write the diff as JSON (with --values)");
    sub->add_option("--html", html_path_, "Also write the diff as HTML (with --values)");
    sub->add_option("commands", commands_, "-- CMD_A ... -- CMD_B ...")->required();
    sub->positionals_at_end();
    return sub;
  }

  int Run() override {
    // CLI11 consumes the first "--"; the second one separates the commands.
    std::vector<std::string> a, b;
    bool second = false;
    for (const std::string& arg : commands_) {
      if (arg == "--" && !second) {
        second = true;
        continue;
      }
      (second ? b : a).push_back(arg);
    }
    if (a.empty() || b.empty()) {
      return Fail("give two commands: magneton compare -n 3 -- python a.py -- python b.py", 2);
    }
    analysis::AbRecordRequest req;
    req.plan_a.argv = a;
    req.plan_b.argv = b;
    req.runs = runs_;
    req.values = values_;
    req.out_dir = out_dir_;
    runner::SubprocessRunner processes;
    auto recorded = analysis::RecordInterleaved(req, processes, ShowProgress, NowNs);
    if (!recorded.ok()) return Fail(recorded.status().message());

    // Analyse; when a verdict is left open by its interval, record more pairs
    // once (--more-runs) and analyse them all.
    int more = more_runs_ < 0 ? runs_ : more_runs_;
    std::string why_more;
    StatusOr<analysis::JobEnergies> jobs = Internal("not loaded");
    analysis::JobComparison job;
    analysis::JobCall job_call = analysis::JobCall::kNoInterval;
    std::unique_ptr<AnalysisSession> session;
    for (;;) {
      jobs = analysis::LoadJobEnergies(recorded->traces_a, recorded->traces_b, options_.domain);
      if (!jobs.ok()) return Fail(jobs.status().message());
      job = analysis::CompareJobs(jobs->first_uj, jobs->second_uj, /*paired=*/true, 0.95);
      if (values_) {
        session.reset();  // one session's traces in memory at a time
        auto opened = AnalysisSession::OpenRuns(recorded->traces_a, recorded->traces_b, options_);
        if (!opened.ok()) return Fail(opened.status().message());
        session = std::move(*opened);
        Status st = session->Diff();
        if (!st.ok()) return Fail(st.message());
      }
      job_call = analysis::CallJobs(job, options_.tau, detect::MeanLoad(jobs->first_load),
                                    detect::MeanLoad(jobs->second_load));
      const analysis::Undecided undecided = analysis::FindUndecided(
          session && session->data().detection ? &*session->data().detection : nullptr, job_call);
      const int add = analysis::PairsToAdd(undecided, more);
      if (add == 0) break;
      const int done = static_cast<int>(recorded->traces_a.size());
      why_more = fmt::format("{} more per side: {} undecided after {}", add, undecided.Describe(), done);
      std::fprintf(stderr, "%s undecided after %d run(s) per side: recording %d more per side (--more-runs 0: none)\n",
                   undecided.Describe().c_str(), done, add);
      req.first_run = done + 1;
      req.runs = add;
      more -= add;
      auto extra = analysis::RecordInterleaved(req, processes, ShowProgress, NowNs);
      if (!extra.ok()) return Fail(extra.status().message());
      recorded->traces_a.insert(recorded->traces_a.end(), extra->traces_a.begin(), extra->traces_a.end());
      recorded->traces_b.insert(recorded->traces_b.end(), extra->traces_b.begin(), extra->traces_b.end());
    }
    if (!why_more.empty()) std::printf("runs: %zu per side (%s)\n", recorded->traces_a.size(), why_more.c_str());
    PrintJob(*jobs, job, job_call);

    if (!values_) {
      std::printf("(record with --values to find which regions differ and why)\n");
      return 0;
    }
    Status st;
    std::printf("\n%s", session->TerminalReport(verbose_).c_str());
    if (!json_path_.empty()) {
      st = WriteTextFile(json_path_, session->JsonReport());
      if (!st.ok()) return Fail(st.message());
    }
    if (!html_path_.empty()) {
      st = WriteTextFile(html_path_, session->HtmlReport());
      if (!st.ok()) return Fail(st.message());
    }
    return 0;
  }

 private:
  void PrintJob(const analysis::JobEnergies& jobs, const analysis::JobComparison& job,
                analysis::JobCall job_call) const {
    const Provenance p = jobs.provenance;
    std::printf("job energy over %zu run(s) per side (domain %s, %s):\n", job.runs_first, jobs.domain.c_str(),
                ProvenanceHeading(p));
    std::printf("  A: mean %s\n  B: mean %s\n", FormatEnergy(job.mean_first_uj, p).c_str(),
                FormatEnergy(job.mean_second_uj, p).c_str());
    const double a_over_b = 1 / job.ratio;
    if (!job.interval.known) {
      std::printf("  A/B %.3f (no interval from one run per side: use -n 3 or more)\n", a_over_b);
      return;
    }
    const double lo = 1 / job.interval.high, hi = 1 / job.interval.low;
    const detect::MachineLoadShares load_a = detect::MeanLoad(jobs.first_load);
    const detect::MachineLoadShares load_b = detect::MeanLoad(jobs.second_load);
    std::string call = "no difference beyond tau";
    switch (job_call) {
      case analysis::JobCall::kFirstCostsMore:
        call = "A costs more";
        break;
      case analysis::JobCall::kSecondCostsMore:
        call = "B costs more";
        break;
      case analysis::JobCall::kInconclusive:
        call = "inconclusive: the interval straddles tau; record more runs";
        break;
      case analysis::JobCall::kBusierCostsMore: {
        const bool a_costlier = a_over_b > 1;
        const detect::MachineLoadShares& busy = a_costlier ? load_a : load_b;
        const detect::MachineLoadShares& quiet = a_costlier ? load_b : load_a;
        call = fmt::format(
            "inconclusive: other work took {:.0f}% of the machine's CPU time while {}{} ({:.0f}% for {}), "
            "which alone can make it up to {:.2f}x costlier; record again on a quieter machine",
            100 * busy.Total(), a_costlier ? 'A' : 'B', busy.over_job ? "'s jobs ran" : " was recorded",
            100 * quiet.Total(), a_costlier ? 'B' : 'A',
            analysis::JobLoadBound(job, load_a, load_b));
        break;
      }
      case analysis::JobCall::kNoInterval:
      case analysis::JobCall::kNoDifference:
        break;
    }
    std::printf("  A/B %.3f, 95%% interval [%.3f, %.3f] (%s over %zu runs): %s\n", a_over_b, lo, hi,
                job.method.c_str(), job.runs_first, call.c_str());
  }

  int runs_ = 3;
  int more_runs_ = -1;  // -1: as many as runs_
  bool verbose_ = false;
  bool values_ = false;
  std::string out_dir_, json_path_, html_path_;
  std::vector<std::string> commands_;
  AnalysisOptions options_;
};

}  // namespace

std::unique_ptr<Command> MakeCompareCommand() { return std::make_unique<CompareCommand>(); }

}  // namespace magneton::cli
