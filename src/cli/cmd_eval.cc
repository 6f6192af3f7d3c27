// magneton eval cases/: record every known case, diff it over an (epsilon,
// tau) sweep, score it against expected.json, write docs/EVALUATION.md.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "cli/text_file.h"
#include "runner/record_child.h"
#include "runner/subprocess.h"
#include "eval/eval.h"
#include "eval/eval_env.h"
#include "eval/spread.h"
#include "trace/shell_quote.h"

namespace magneton::cli {
namespace {

namespace fs = std::filesystem;

std::string Tail(const std::string& path, size_t max_chars) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > max_chars) s = "..." + s.substr(s.size() - max_chars);
  return s;
}

// The command line as typed (from /proc/self/cmdline), "magneton eval ..."
// when that is unavailable.
std::string CommandLine(const std::string& fallback) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  std::string arg;
  while (std::getline(in, arg, '\0')) argv.push_back(arg);
  if (argv.empty()) return fallback;
  argv[0] = "magneton";
  return ShellQuoteArgv(argv);
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Machine() {
  utsname u{};
  std::string s = uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " " + u.machine : "unknown";
  return s + ", " + std::to_string(std::thread::hardware_concurrency()) + " CPU threads";
}

// Records one script with tensor values under `python`; its output goes to
// <trace>.log unless verbose.
Status RecordScript(const std::string& python, const std::string& script, const std::string& trace, bool verbose) {
  RecordRunRequest req;
  req.output = trace;
  req.label = fs::path(script).parent_path().filename().string() + "/" + fs::path(script).filename().string();
  req.plan.argv = {python, script};
  req.values = true;
  const std::string log = trace + ".log";
  if (!verbose) req.log_path = log;
  auto recorded = runner::RecordChild(req);
  if (!recorded.ok()) return recorded.status();
  if (recorded->exit_code != 0 || !recorded->trace_status.ok()) {
    const std::string why = recorded->trace_status.ok() ? "" : ": " + recorded->trace_status.message();
    return Internal("recording " + script + " failed (exit " + std::to_string(recorded->exit_code) + ")" + why +
                    (verbose ? std::string() : "; " + log + " ends with: " + Tail(log, 600)));
  }
  return Status::Ok();
}

// The interpreter for one side of a case: the main one, or the cached
// environment with that side's requirements from the case's env.json.
StatusOr<std::string> PythonForScript(const std::string& script, const std::string& cache_root,
                                      const eval::Progress& progress) {
  const fs::path p(script);
  auto env = eval::ReadCaseEnv(p.parent_path().string());
  if (!env.ok()) return env.status();
  const std::vector<std::string>& reqs = env->side(p.stem().string().empty() ? 'a' : p.stem().string()[0]);
  if (reqs.empty()) return runner::FindPython();
  // Asked once per eval (it imports torch), then the same for every case.
  static std::optional<StatusOr<eval::BasePython>> base;
  if (!base) base = eval::QueryBasePython(runner::FindPython(), runner::RunCapture);
  if (!base->ok()) return base->status();
  return eval::EnsureCaseEnv(reqs, **base, cache_root, runner::RunCapture, progress);
}

class EvalCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("eval", "Run the known-case suite end to end and score detection and diagnosis");
    sub->add_option("cases", cases_dir_, "Folder of case folders (each with a.py, b.py, expected.json)")->required();
    sub->add_option("--case", case_ids_, "Only these case ids (repeatable or comma-separated)")->delimiter(',');
    sub->add_flag("--quick", quick_,
                  "Only the CI subset (hf-34570, topk-sort, identical, pytorch-141822; a few minutes on 2 cores)");
    sub->add_option("--work-dir", work_dir_, "Where recordings go (default: build/eval-runs next to the cases folder)");
    sub->add_flag("--reuse", reuse_, "Reuse recordings newer than their scripts instead of recording again");
    sub->add_option("--repeats", repeats_,
                    "Record each case this many times (pairs interleaved A B, B A, ...); all pairs of a case are "
                    "diffed together, each finding with an interval over the pairs")
        ->default_val(1)
        ->check(CLI::Range(1, 20));
    sub->add_option("--epsilons", sweep_.epsilons, "Tensor tolerances to sweep")->delimiter(',');
    sub->add_option("--taus", sweep_.taus, "Energy thresholds to sweep")->delimiter(',');
    sub->add_option("--min-share", sweep_.min_share, "Noise floor: findings saving less than this share are equal")
        ->default_val(defaults::kMinShare)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--json", json_path_, "Also write the results as JSON (schema magneton.eval/1)");
    sub->add_option("--markdown", markdown_path_,
                    "Write the results page here (default: docs/EVALUATION.md next to the cases folder, for a full "
                    "run only; a --case or --quick run writes it only when this is given)");
    sub->add_option("--spread-with", spread_with_,
                    "Earlier full runs' --json files: the results page shows this run beside them (run-to-run "
                    "spread of F1, which case was missed in which run)")
        ->delimiter(',');
    sub->add_flag("--prepare-envs", prepare_envs_,
                  "Only create (or find) the cached environments of the cases' env.json and print each side's "
                  "interpreter; record nothing");
    sub->add_flag("--verbose", verbose_, "Show the recorded programs' output instead of logging it");
    return sub;
  }

  // --prepare-envs: "<id> <side> <python>" per side of each selected case.
  static int PrepareEnvs(const std::vector<eval::CaseDir>& cases) {
    const std::string cache_root = eval::DefaultEnvCacheRoot();
    const eval::Progress progress = [](const std::string& line) {
      std::fprintf(stderr, "magneton eval %s\n", line.c_str());
    };
    for (const auto& c : cases) {
      for (const char* side : {"a", "b"}) {
        auto python = PythonForScript((fs::path(c.path) / (std::string(side) + ".py")).string(), cache_root, progress);
        if (!python.ok()) return Fail(c.id + " (" + side + "): " + python.status().message());
        std::printf("%s %s %s\n", c.id.c_str(), side, python->c_str());
      }
    }
    return 0;
  }

  int Run() override {
    const auto t0 = std::chrono::steady_clock::now();
    auto all = eval::FindCases(cases_dir_);
    if (!all.ok()) return Fail(all.status().message());
    if (all->empty()) return Fail("no case folders (a.py, b.py, expected.json) in " + cases_dir_);
    std::set<std::string> want(case_ids_.begin(), case_ids_.end());
    if (quick_) want.insert(eval::QuickCaseIds().begin(), eval::QuickCaseIds().end());
    std::vector<eval::CaseDir> cases;
    for (const auto& c : *all) {
      if (want.empty() || want.count(c.id)) cases.push_back(c);
    }
    for (const std::string& id : want) {
      bool found = false;
      for (const auto& c : *all) found = found || c.id == id;
      if (!found) return Fail("no case '" + id + "' in " + cases_dir_);
    }
    const bool full = want.empty();
    if (prepare_envs_) return PrepareEnvs(cases);
    // Earlier runs are read before this one is recorded: a wrong path fails in a second, not after the suite.
    std::vector<eval::RunSummary> runs;
    for (const std::string& path : spread_with_) {
      auto earlier = eval::ReadRunSummary(path);
      if (!earlier.ok()) return Fail(earlier.status().message());
      runs.push_back(std::move(*earlier));
    }
    // The spread goes on the results page, which a --case or --quick run writes only when asked.
    if (!runs.empty() && markdown_path_.empty() && !full) {
      return Fail("--spread-with puts the spread on the results page: give --markdown for a --case or --quick run");
    }
    // The folder holding the cases folder (the repository for cases/).
    const fs::path base = fs::absolute(fs::path(cases_dir_) / "..").lexically_normal();

    eval::RunOptions options;
    options.work_dir = work_dir_.empty() ? (base / "build" / "eval-runs").string() : work_dir_;
    options.reuse = reuse_;
    options.repeats = repeats_;
    options.sweep = sweep_;
    if (!std::getenv("HF_HUB_OFFLINE")) setenv("HF_HUB_OFFLINE", "1", 0);  // the cases download nothing

    std::fprintf(stderr, "magneton eval: %zu case(s) x %d pair(s), %zu x %zu (epsilon, tau) settings, recordings in %s\n",
                 cases.size(), repeats_, sweep_.epsilons.size(), sweep_.taus.size(), options.work_dir.c_str());
    const bool verbose = verbose_;
    eval::Report report;
    report.command = CommandLine("magneton eval " + cases_dir_);
    report.date = NowUtc();
    report.machine = Machine();
    report.options = sweep_;
    const eval::Progress progress = [](const std::string& line) {
      std::fprintf(stderr, "magneton eval %s\n", line.c_str());
      std::fflush(stderr);
    };
    // GPU cases on a machine without one: reported as skipped, never recorded.
    std::vector<eval::CaseResult> skipped = eval::SkipCasesNeedingGpu(&cases, eval::DetectGpuHere());
    for (const auto& c : skipped) progress(c.expected.id + ": skipped (" + c.skipped + ")");
    const std::string cache_root = eval::DefaultEnvCacheRoot();
    report.cases = eval::RunSuite(
        cases, options,
        [verbose, &cache_root, &progress](const std::string& script, const std::string& trace) -> Status {
          auto python = PythonForScript(script, cache_root, progress);
          if (!python.ok()) return python.status();
          return RecordScript(*python, script, trace, verbose);
        },
        progress);
    for (auto& c : skipped) report.cases.push_back(std::move(c));
    std::sort(report.cases.begin(), report.cases.end(),
              [](const eval::CaseResult& x, const eval::CaseResult& y) { return x.expected.id < y.expected.id; });
    report.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::fputs(eval::RenderTable(report).c_str(), stdout);
    std::string markdown = markdown_path_;
    if (markdown.empty() && full) markdown = (base / "docs" / "EVALUATION.md").string();
    if (!markdown.empty()) {
      std::string spread;
      if (!runs.empty()) {
        auto this_run = eval::SummarizeRun(eval::ToJson(report), "this run");
        if (!this_run.ok()) return Fail(this_run.status().message());
        runs.push_back(std::move(*this_run));
        spread = eval::RenderSpread(runs);
      }
      Status st = WriteTextFile(markdown, eval::RenderMarkdown(report, spread));
      if (!st.ok()) return Fail(st.message());
      std::fprintf(stderr, "magneton eval: wrote %s\n", markdown.c_str());
    }
    if (!json_path_.empty()) {
      Status st = WriteTextFile(json_path_, eval::ToJson(report).dump(2) + "\n");
      if (!st.ok()) return Fail(st.message());
      std::fprintf(stderr, "magneton eval: wrote %s\n", json_path_.c_str());
    }
    int failed = 0;
    for (const auto& c : report.cases) failed += !c.ok && c.skipped.empty();
    if (failed) return Fail(std::to_string(failed) + " case(s) could not be run; see above");
    return 0;
  }

 private:
  std::string cases_dir_, work_dir_, json_path_, markdown_path_;
  std::vector<std::string> case_ids_, spread_with_;
  bool quick_ = false, reuse_ = false, verbose_ = false, prepare_envs_ = false;
  int repeats_ = 1;
  eval::SweepOptions sweep_;
};

}  // namespace

std::unique_ptr<Command> MakeEvalCommand() { return std::make_unique<EvalCommand>(); }

}  // namespace magneton::cli
