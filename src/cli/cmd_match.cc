// magneton match a.mtrace b.mtrace: which regions of two runs compute the same
// thing (method.md section 5), side by side with op names and module scopes.
#include <fmt/format.h>

#include <cstdio>
#include <set>

#include "cli/command.h"
#include "magneton/fingerprint.h"
#include "magneton/match.h"
#include "magneton/trace_reader.h"

namespace magneton::cli {
namespace {

// "aten::linear  GPT2Model/h.0/mlp" for one op.
std::string OpLabel(const Trace& t, int64_t op_id) {
  if (op_id < 0 || static_cast<size_t>(op_id) >= t.ops.size()) return "?";
  const OpEvent& op = t.ops[op_id];
  std::string scope = t.ScopePath(op.scope_id);
  return scope.empty() ? t.str(op.name_id) : fmt::format("{}  [{}]", t.str(op.name_id), scope);
}

std::string TensorLabel(const Trace& t, int64_t id) {
  if (id < 0 || static_cast<size_t>(id) >= t.tensors.size()) return "?";
  const TensorMeta& m = t.tensors[id];
  std::string shape;
  for (size_t i = 0; i < m.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(m.shape[i]);
  return fmt::format("t{} {}[{}]", id, m.dtype, shape);
}

class MatchCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("match", "Find regions of two runs that compute the same thing");
    sub->add_option("a", path_a_, "First trace (recorded with --values)")->required();
    sub->add_option("b", path_b_, "Second trace (recorded with --values)")->required();
    sub->add_option("--epsilon", epsilon_, "Tensor equivalence tolerance (relative to value scale)")
        ->default_val(1e-2)
        ->check(CLI::NonNegativeNumber);
    sub->add_flag("--leaf-ops", leaf_ops_, "Use innermost ops as graph nodes instead of top-level ops");
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
        return Fail(path + " has no tensor fingerprints; matching compares tensor values, so record it with "
                           "`magneton record --values ...`");
      }
    }
    MatchOptions options;
    options.epsilon = epsilon_;
    options.graph.leaf_ops = leaf_ops_;
    auto result = MatchTraces(*a, *fa, *b, *fb, options);
    if (!result.ok()) return Fail(result.status().message());
    Print(*a, *b, *result);
    return 0;
  }

 private:
  void Print(const Trace& a, const Trace& b, const MatchResult& r) const {
    std::printf("A: %s\nB: %s\nepsilon %g: %zu matched region pair(s), %zu/%zu ops unmatched\n\n", path_a_.c_str(),
                path_b_.c_str(), epsilon_, r.regions.size(), r.unmatched_ops_a.size(), r.unmatched_ops_b.size());
    const int width = 56;
    for (size_t i = 0; i < r.regions.size(); ++i) {
      const RegionPair& rp = r.regions[i];
      std::string from = rp.starts_at_model_inputs ? "model inputs"
                                                   : (rp.inputs.empty() ? "?"
                                                                        : TensorLabel(a, rp.inputs[0].a) + " = " +
                                                                              TensorLabel(b, rp.inputs[0].b));
      std::string to = rp.outputs.empty() ? "?" : TensorLabel(a, rp.outputs[0].a) + " = " + TensorLabel(b, rp.outputs[0].b);
      std::printf("region %zu  (%zu vs %zu ops)  from %s  to %s\n", i + 1, rp.ops_a.size(), rp.ops_b.size(),
                  from.c_str(), to.c_str());
      const size_t rows = std::max(rp.ops_a.size(), rp.ops_b.size());
      for (size_t k = 0; k < rows; ++k) {
        std::string left = k < rp.ops_a.size() ? OpLabel(a, rp.ops_a[k]) : "";
        std::string right = k < rp.ops_b.size() ? OpLabel(b, rp.ops_b[k]) : "";
        std::printf("  %-*s | %s\n", width, left.c_str(), right.c_str());
      }
      std::printf("\n");
    }
    if (!r.unmatched_ops_a.empty() || !r.unmatched_ops_b.empty()) {
      std::printf("unmatched: %zu op(s) in A, %zu op(s) in B\n", r.unmatched_ops_a.size(), r.unmatched_ops_b.size());
    }
  }

  std::string path_a_, path_b_;
  double epsilon_ = 1e-2;
  bool leaf_ops_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeMatchCommand() { return std::make_unique<MatchCommand>(); }

}  // namespace magneton::cli
