// magneton match a.mtrace b.mtrace: which regions of two runs compute the same
// thing (method.md section 5), side by side with op names and module scopes.
// Several model inputs: a1.mtrace,a2.mtrace b1.mtrace,b2.mtrace (one run per
// input on each side, in the same order); a region pair is kept only if it
// matched for every input. The regions shown are those of the first pair.
#include <cstdio>
#include <memory>

#include "analysis/session_data.h"
#include "cli/command.h"
#include "cli/path_list.h"
#include "magneton/analysis.h"
#include "report/match_output.h"

namespace magneton::cli {
namespace {

class MatchCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("match", "Find regions of two runs that compute the same thing");
    sub->add_option("a", path_a_, "First system's trace(s), recorded with --values; comma-separated, one per model input")
        ->required();
    sub->add_option("b", path_b_, "Second system's trace(s), same model inputs in the same order")->required();
    sub->add_option("--epsilon", options_.epsilon, "Tensor equivalence tolerance (relative to value scale)")
        ->default_val(defaults::kEpsilon)
        ->check(CLI::NonNegativeNumber);
    sub->add_flag("--leaf-ops", options_.leaf_ops, "Use innermost ops as graph nodes instead of top-level ops");
    sub->add_flag("--json", json_, "Print the result as JSON (regions with op ids, names, scopes, boundary tensors)");
    return sub;
  }

  int Run() override {
    options_.progress = [](const std::string& line) { std::fprintf(stderr, "magneton: %s\n", line.c_str()); };
    auto session = AnalysisSession::Open(SplitCommas(path_a_), SplitCommas(path_b_), options_);
    if (!session.ok()) return Fail("match: " + session.status().message());
    Status st = (*session)->Match();
    if (!st.ok()) return Fail(st.message());
    const analysis::SessionData& d = (*session)->data();
    const auto render = json_ ? report::MatchJson : report::MatchText;
    std::fputs(render(d.trace_a(), d.trace_b(), path_a_, path_b_, options_.epsilon, d.a.size(), *d.match).c_str(),
               stdout);
    return 0;
  }

 private:
  std::string path_a_, path_b_;
  AnalysisOptions options_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeMatchCommand() { return std::make_unique<MatchCommand>(); }

}  // namespace magneton::cli
