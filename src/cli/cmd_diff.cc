// magneton diff a.mtrace b.mtrace: where one run spends more energy than the
// other for the same results, and why (method.md sections 6 and 7).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/command.h"
#include "cli/text_file.h"
#include "cli/line_rerun.h"
#include "cli/record_child.h"
#include "cli/subprocess.h"
#include "magneton/counterfactual.h"
#include "magneton/detect.h"
#include "magneton/diagnose.h"
#include "magneton/fingerprint.h"
#include "magneton/trace_reader.h"
#include "report/diff_report.h"
#include "trust/trace_trust.h"

namespace magneton::cli {
namespace {

// A trace's command is re-run only when this user recorded it on this
// machine, or with --rerun (docs/DIFF.md, "Which traces are re-run"). Says,
// for each side that is not trusted, why and exactly what would run; returns
// "" when every side may be re-run, else the reason for the report.
std::string RefuseUntrusted(const std::vector<std::pair<std::string, const Trace*>>& sides, const char* step,
                            const std::string& would_run, bool explicit_rerun) {
  std::string refused;
  for (const auto& [path, trace] : sides) {
    const trust::RerunAuthority auth = trust::VerifyRerunAuthority(*trace);
    if (auth.trusted) continue;
    if (explicit_rerun) {
      std::fprintf(stderr, "magneton: --rerun: running the command recorded in %s although %s\n", path.c_str(),
                   auth.reason.c_str());
      continue;
    }
    std::fprintf(stderr, "magneton: will not re-run the command recorded in %s for %s: %s\n", path.c_str(), step,
                 auth.reason.c_str());
    if (!refused.empty()) refused += "; ";
    refused += path + ": " + auth.reason;
  }
  if (!refused.empty()) {
    std::fprintf(stderr,
                 "magneton: it would run\n%s\nmagneton: pass --rerun to run it (only if you trust where the trace "
                 "came from: its command line is code)\n",
                 would_run.c_str());
    refused = "not re-run, a trace is not trusted (" + refused + "); --rerun runs it";
  }
  return refused;
}

// What the line-level step executes for each trace: its recorded command in
// its recorded working directory.
std::string WouldRun(const std::vector<std::pair<std::string, const Trace*>>& sides) {
  std::string out;
  for (const auto& [path, t] : sides) {
    if (!out.empty()) out += "\n";
    out += "  for " + path + ", in " + t->meta.cwd + ", /bin/sh -c runs:\n    " + t->meta.command_line;
  }
  return out;
}

class DiffCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("diff", "Flag regions where one run wastes energy, and diagnose why");
    sub->add_option("a", path_a_, "First trace (recorded with --values)")->required();
    sub->add_option("b", path_b_, "Second trace (recorded with --values)")->required();
    sub->add_option("--tau", options_.tau, "Relative energy difference that counts")
        ->default_val(0.10)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--epsilon", options_.match.epsilon, "Tensor equivalence tolerance for matching")
        ->default_val(1e-2)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--min-share", options_.min_share,
                    "Ignore findings that save less than this share of the end-to-end energy")
        ->default_val(0.0)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--min-same-work-share", options_.min_same_work_share,
                    "Noise floor of findings where both sides run the same ops on the same shapes (timing is "
                    "their only evidence): below this share of the job they are equal")
        ->default_val(0.05)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--domain", options_.domain, "Energy domain (default: the largest one both traces have)");
    sub->add_option("--json", json_path_, "Also write the report as JSON (docs/REPORT_FORMAT.md)");
    sub->add_option("--html", html_path_, "Also write a self-contained HTML report");
    sub->add_flag("--confirm", confirm_,
                  "Re-run the wasteful side with the top suspected variable set to the other side's value, "
                  "and report the measured saving (or that the hypothesis failed)");
    sub->add_flag("--no-rerun", no_rerun_,
                  "Do not re-run the two recorded commands with the deviation-point function traced line by line "
                  "(by default diff does, once, for the top finding, when both traces carry a command line)");
    sub->add_flag("--rerun", rerun_,
                  "Re-run recorded commands (the line-level step, --confirm) even of traces this user did not record "
                  "on this machine: a trace's command line is code, run it only if you trust the trace");
    sub->add_option("--confirm-min-saving", confirm_min_saving_, "Relative saving that confirms")->default_val(0.05);
    return sub;
  }

  int Run() override {
    auto a = ReadTrace(path_a_);
    if (!a.ok()) return Fail(a.status().message());
    auto b = ReadTrace(path_b_);
    if (!b.ok()) return Fail(b.status().message());
    auto fa = LoadFingerprints(path_a_);
    if (!fa.ok()) return Fail(fa.status().message());
    auto fb = LoadFingerprints(path_b_);
    if (!fb.ok()) return Fail(fb.status().message());
    for (const auto& [path, fps] : {std::pair{path_a_, &*fa}, std::pair{path_b_, &*fb}}) {
      if (fps->empty()) {
        return Fail(path + " has no tensor fingerprints; diff compares tensor values, so record it with "
                           "`magneton record --values ...`");
      }
    }
    auto result = detect::Detect(*a, *fa, *b, *fb, options_);
    if (!result.ok()) return Fail(result.status().message());
    std::vector<diagnose::Diagnosis> diagnoses = diagnose::Diagnose(*a, *b, *result);
    if (!no_rerun_) TraceLines(*a, *b, &diagnoses);
    report::DiffReportInput in{path_a_, path_b_, &*a, &*b, &*result, &diagnoses};
    std::fputs(report::RenderDiffTerminal(in).c_str(), stdout);
    if (!json_path_.empty()) {
      Status st = WriteTextFile(json_path_, report::DiffToJson(in).dump(2) + "\n");
      if (!st.ok()) return Fail(st.message());
    }
    if (!html_path_.empty()) {
      Status st = WriteTextFile(html_path_, report::RenderDiffHtml(in));
      if (!st.ok()) return Fail(st.message());
    }
    if (confirm_) return Confirm(*a, *b, *result, diagnoses);
    return 0;
  }

  // The line-level step (docs/DIFF.md) for the first flagged finding with a
  // deviation point: one re-run of each side, so the cost stays bounded.
  void TraceLines(const Trace& a, const Trace& b, std::vector<diagnose::Diagnosis>* diagnoses) {
    if (a.meta.command_line.empty() || b.meta.command_line.empty()) return;
    // A branch inside one function (the paths differ in the same function)
    // is where a line trace finds something; identical paths down to the
    // innermost frame differ only in tensor sizes.
    diagnose::Diagnosis* chosen = nullptr;
    for (diagnose::Diagnosis& d : *diagnoses) {
      if (!d.deviation.found) continue;
      if (chosen == nullptr) chosen = &d;
      if (d.deviation.frame_a != d.deviation.frame_b) {
        chosen = &d;
        break;
      }
    }
    if (chosen == nullptr) return;
    const std::vector<std::pair<std::string, const Trace*>> sides = {{path_a_, &a}, {path_b_, &b}};
    const std::string refused = RefuseUntrusted(sides, "the line-level step", WouldRun(sides), rerun_);
    if (!refused.empty()) {
      diagnose::LineDiagnosis skipped;
      skipped.note = refused;
      chosen->line = std::make_shared<const diagnose::LineDiagnosis>(std::move(skipped));
      return;
    }
    std::error_code ec;
    const std::string prefix = std::filesystem::absolute(path_a_, ec).string();
    std::fprintf(stderr, "magneton: re-running A and B with %s traced line by line (--no-rerun skips this)\n",
                 chosen->deviation.frame_a.c_str());
    auto line = RunLineDiagnosis(a, b, chosen->deviation, prefix, rerun_);
    if (!line.ok()) {
      std::fprintf(stderr, "magneton: no line-level diagnosis: %s\n", line.status().message().c_str());
      diagnose::LineDiagnosis failed;
      failed.note = line.status().message();
      chosen->line = std::make_shared<const diagnose::LineDiagnosis>(std::move(failed));
      return;
    }
    diagnose::ApplyLineDiagnosis(std::move(*line), diagnose::DiffConfig(a, b), chosen);
  }

  int Confirm(const Trace& a, const Trace& b, const detect::DetectResult& result,
              const std::vector<diagnose::Diagnosis>& diagnoses) {
    auto plan = diagnose::PlanCounterfactual(a, b, result, diagnoses);
    if (!plan.ok()) {
      std::printf("\n--confirm: nothing to re-run: %s\n", plan.status().message().c_str());
      return 0;
    }
    const std::string& original = plan->rerun_side == 'A' ? path_a_ : path_b_;
    RecordRequest req;
    req.output = original + ".confirm.mtrace";
    req.label = "confirm " + plan->variable.key + "=" + plan->new_value;
    req.command = {"/bin/sh", "-c", plan->command_line};
    req.cwd = plan->cwd;
    for (const auto& [k, v] : plan->environment) req.extra_env[k] = v;
    // The command is the wasteful side's, the value the other side's: both must be trusted.
    std::vector<std::string> assignments;
    for (const auto& [k, v] : plan->environment) assignments.push_back(k + "=" + v);
    const std::string would_run =
        "  in " + plan->cwd + ", with " + ShellQuote(assignments) + ", /bin/sh -c runs:\n    " + plan->command_line;
    const std::string refused = RefuseUntrusted({{path_a_, &a}, {path_b_, &b}}, "--confirm", would_run, rerun_);
    if (!refused.empty()) {
      std::printf("\n--confirm: nothing re-run: %s\n", refused.c_str());
      return 0;
    }
    std::printf("\n--confirm: re-running %c (%s) with %s = %s\n", plan->rerun_side, plan->command_line.c_str(),
                plan->variable.key.c_str(), plan->new_value.c_str());
    std::fflush(stdout);
    int code = RecordChild(req, /*verbose=*/true);
    if (code != 0) return Fail("the re-run failed (exit code " + std::to_string(code) + "); nothing confirmed");
    auto after = ReadTrace(req.output);
    if (!after.ok()) return Fail(after.status().message());
    auto outcome = diagnose::EvaluateCounterfactual(*plan, plan->rerun_side == 'A' ? a : b, *after,
                                                    confirm_min_saving_);
    if (!outcome.ok()) return Fail(outcome.status().message());
    std::printf("%s\n(re-run trace: %s)\n", outcome->sentence.c_str(), req.output.c_str());
    return 0;
  }

 private:
  std::string path_a_, path_b_, json_path_, html_path_;
  bool confirm_ = false;
  bool no_rerun_ = false;
  bool rerun_ = false;
  double confirm_min_saving_ = 0.05;
  detect::Options options_;
};

}  // namespace

std::unique_ptr<Command> MakeDiffCommand() { return std::make_unique<DiffCommand>(); }

}  // namespace magneton::cli
