// magneton gate --baseline BASE[,…] CANDIDATE[,…] [--max-regression 5%]: exits
// 1 only on a significant energy regression (analysis/gate.h), 2 on an error.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "analysis/gate.h"
#include "cli/command.h"
#include "cli/path_list.h"
#include "cli/text_file.h"

namespace magneton::cli {
namespace {

// "5%" or "0.05".
bool ParseShare(std::string text, double* out) {
  bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || v < 0) return false;
  *out = percent ? v / 100 : v;
  return true;
}

class GateCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("gate", "Fail (exit 1) on a significant energy regression against a baseline");
    sub->add_option("--baseline", baseline_, "Baseline trace(s), comma-separated recordings of one program")
        ->required();
    sub->add_option("candidate", candidate_, "Candidate trace(s), comma-separated")->required();
    sub->add_option("--max-regression", max_regression_, "How much more the candidate may cost: 5% or 0.05")
        ->default_val("5%");
    sub->add_option("--markdown", markdown_path_, "Write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)");
    sub->add_option("--junit", junit_path_, "Write JUnit XML (one test case per check)");
    sub->add_option("--domain", options_.domain, "Energy domain (default: the largest one both have)");
    sub->add_flag("--update-baseline", update_baseline_,
                  "When the gate passes, store the candidate recordings as the new baseline (over the baseline files)");
    return sub;
  }

  int Run() override {
    if (!ParseShare(max_regression_, &options_.max_regression)) {
      return Fail("--max-regression takes a share like 5% or 0.05, not '" + max_regression_ + "'", 2);
    }
    const std::vector<std::string> base = SplitCommas(baseline_), cand = SplitCommas(candidate_);
    auto result = analysis::RunGate(base, cand, options_);
    if (!result.ok()) return Fail(result.status().message(), 2);
    std::fputs(analysis::GateTerminal(*result, options_).c_str(), stdout);
    if (!markdown_path_.empty()) {
      // Appending: $GITHUB_STEP_SUMMARY collects every step's summary.
      std::FILE* f = std::fopen(markdown_path_.c_str(), "a");
      if (!f) return Fail("cannot write " + markdown_path_, 2);
      std::fputs(analysis::GateMarkdown(*result, options_).c_str(), f);
      std::fclose(f);
    }
    if (!junit_path_.empty()) {
      Status st = WriteTextFile(junit_path_, analysis::GateJUnit(*result, options_));
      if (!st.ok()) return Fail(st.message(), 2);
    }
    if (result->failed()) {
      if (update_baseline_) std::printf("baseline not updated: the candidate regressed\n");
      return 1;
    }
    if (update_baseline_) return UpdateBaseline(base, cand);
    return 0;
  }

 private:
  // Candidate k replaces baseline k; candidates beyond the baseline's count
  // go beside the first baseline file as <stem>.<k>.mtrace.
  static int UpdateBaseline(const std::vector<std::string>& base, const std::vector<std::string>& cand) {
    namespace fs = std::filesystem;
    std::vector<std::string> written;
    for (size_t k = 0; k < cand.size(); ++k) {
      fs::path to = k < base.size() ? fs::path(base[k])
                                    : fs::path(base.front()).parent_path() /
                                          (fs::path(base.front()).stem().string() + "." + std::to_string(k + 1) +
                                           ".mtrace");
      std::error_code ec;
      fs::copy_file(cand[k], to, fs::copy_options::overwrite_existing, ec);
      if (ec) return Fail("cannot store " + cand[k] + " as " + to.string() + ": " + ec.message(), 2);
      written.push_back(to.string());
    }
    std::string joined;
    for (const std::string& w : written) joined += (joined.empty() ? "" : ",") + w;
    std::printf("baseline updated: --baseline %s\n", joined.c_str());
    return 0;
  }

  std::string baseline_, candidate_, max_regression_ = "5%", markdown_path_, junit_path_;
  bool update_baseline_ = false;
  analysis::GateOptions options_;
};

}  // namespace

std::unique_ptr<Command> MakeGateCommand() { return std::make_unique<GateCommand>(); }

}  // namespace magneton::cli
