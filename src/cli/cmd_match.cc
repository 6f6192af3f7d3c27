// magneton match a.mtrace b.mtrace: which regions of two runs compute the same
// thing (method.md section 5), side by side with op names and module scopes.
// Several model inputs: a1.mtrace,a2.mtrace b1.mtrace,b2.mtrace (one run per
// input on each side, in the same order); a region pair is kept only if it
// matched for every input. The regions shown are those of the first pair.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/match_output.h"
#include "magneton/fingerprint.h"
#include "magneton/match.h"
#include "magneton/trace_reader.h"

namespace magneton::cli {
namespace {

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct LoadedRun {
  std::unique_ptr<Trace> trace;
  std::unique_ptr<FingerprintMap> fingerprints;
};

StatusOr<LoadedRun> Load(const std::string& path) {
  MAGNETON_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
  MAGNETON_ASSIGN_OR_RETURN(FingerprintMap fps, LoadFingerprints(path));
  if (fps.empty()) {
    return InvalidArgument(path + " has no tensor fingerprints; matching compares tensor values, so record it with "
                                  "`magneton record --values ...`");
  }
  return LoadedRun{std::make_unique<Trace>(std::move(trace)), std::make_unique<FingerprintMap>(std::move(fps))};
}

class MatchCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("match", "Find regions of two runs that compute the same thing");
    sub->add_option("a", path_a_, "First system's trace(s), recorded with --values; comma-separated, one per model input")
        ->required();
    sub->add_option("b", path_b_, "Second system's trace(s), same model inputs in the same order")->required();
    sub->add_option("--epsilon", epsilon_, "Tensor equivalence tolerance (relative to value scale)")
        ->default_val(1e-2)
        ->check(CLI::NonNegativeNumber);
    sub->add_flag("--leaf-ops", leaf_ops_, "Use innermost ops as graph nodes instead of top-level ops");
    sub->add_flag("--json", json_, "Print the result as JSON (regions with op ids, names, scopes, boundary tensors)");
    return sub;
  }

  int Run() override {
    const std::vector<std::string> paths_a = SplitCommas(path_a_), paths_b = SplitCommas(path_b_);
    if (paths_a.empty() || paths_a.size() != paths_b.size()) {
      return Fail("match: give the same number of traces on each side (one per model input), comma-separated");
    }
    std::vector<LoadedRun> runs_a, runs_b;
    std::vector<TracePairInput> pairs;
    for (size_t i = 0; i < paths_a.size(); ++i) {
      auto ra = Load(paths_a[i]);
      if (!ra.ok()) return Fail(ra.status().message());
      auto rb = Load(paths_b[i]);
      if (!rb.ok()) return Fail(rb.status().message());
      runs_a.push_back(std::move(*ra));
      runs_b.push_back(std::move(*rb));
      pairs.push_back({runs_a.back().trace.get(), runs_a.back().fingerprints.get(), runs_b.back().trace.get(),
                       runs_b.back().fingerprints.get()});
    }
    MatchOptions options;
    options.epsilon = epsilon_;
    options.graph.leaf_ops = leaf_ops_;
    auto result = MatchAcrossInputs(pairs, options);
    if (!result.ok()) return Fail(result.status().message());
    const std::string out = json_ ? MatchJson(*pairs[0].a, *pairs[0].b, path_a_, path_b_, epsilon_, pairs.size(), *result)
                                  : MatchText(*pairs[0].a, *pairs[0].b, path_a_, path_b_, epsilon_, pairs.size(), *result);
    std::fputs(out.c_str(), stdout);
    return 0;
  }

 private:
  std::string path_a_, path_b_;
  double epsilon_ = 1e-2;
  bool leaf_ops_ = false;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeMatchCommand() { return std::make_unique<MatchCommand>(); }

}  // namespace magneton::cli
