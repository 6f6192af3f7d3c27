// Same-work findings: the same ops on the same input shapes on both sides are
// judged by their typical op pair, so one slow op (a stall) is not waste and a
// real per-op slowdown is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "detect/detect.h"
#include "synthetic_trace.h"

namespace magneton::detect {
namespace {

struct Side {
  Trace trace;
  energy::Attribution energy;
};

// `energies_uj.size()` top-level ops named `name`, 1000 ns each, back to back;
// each reads one float32 tensor of shape {rows, 8} and writes tensor i + 1.
Side MakeSide(const std::string& name, const std::vector<double>& energies_uj, int64_t rows = 4) {
  Side s;
  s.trace.strings = {name};
  TensorMeta input;
  input.id = 0;
  input.shape = {rows, 8};
  input.dtype = "float32";
  s.trace.tensors.push_back(input);
  for (size_t i = 0; i < energies_uj.size(); ++i) {
    OpEvent op;
    op.id = static_cast<int64_t>(i);
    op.name_id = 0;
    op.start_ns = static_cast<int64_t>(i) * 1000;
    op.end_ns = op.start_ns + 1000;
    s.trace.ops.push_back(op);
    TensorMeta out = input;
    out.id = static_cast<int64_t>(i) + 1;
    out.producer_op_id = op.id;
    s.trace.tensors.push_back(out);
    s.trace.op_tensors.push_back({op.id, TensorRole::kInput, 0, 0});
    s.trace.op_tensors.push_back({op.id, TensorRole::kOutput, 0, out.id});
    s.energy.ops.push_back({energies_uj[i], energies_uj[i], 1000});
    s.energy.attributed_uj += energies_uj[i];
  }
  s.energy.domain = "cpu-estimate";
  s.energy.ops_end_ns = s.energy.window_end_ns = static_cast<int64_t>(energies_uj.size()) * 1000;
  s.energy.total_uj = s.energy.job_uj = s.energy.attributed_uj;
  return s;
}

Fingerprint Fp(float scale) {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i + 1);
  return testing::FingerprintOf(v, {4, 4});
}

// One region per op: op i on A with op i on B, outputs i + 1.
const Finding& Top(const Side& a, const Side& b, StatusOr<DetectResult>* holder, const Options& options = {}) {
  MatchResult match;
  FingerprintMap fa, fb;
  for (size_t i = 0; i < a.trace.ops.size(); ++i) {
    RegionPair r;
    r.ops_a = {static_cast<int64_t>(i)};
    r.ops_b = {static_cast<int64_t>(i)};
    r.outputs.push_back({static_cast<int64_t>(i) + 1, static_cast<int64_t>(i) + 1});
    fa[static_cast<int64_t>(i) + 1] = fb[static_cast<int64_t>(i) + 1] = Fp(1);
    match.regions.push_back(r);
  }
  *holder = DetectFromMatch(a.trace, fa, a.energy, b.trace, fb, b.energy, match, options);
  EXPECT_TRUE(holder->ok());
  return (*holder)->findings.front();
}

TEST(DetectSameWork, OneSlowOpAmongManyIsNoise) {
  // Sum 700 vs 400 (1.75x), but three of four pairs are equal.
  Side a = MakeSide("aten::addmm", {100, 100, 100, 400});
  Side b = MakeSide("aten::addmm", {100, 100, 100, 100});
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_TRUE(f.same_work);
  EXPECT_EQ(f.paired_ops, 4u);
  EXPECT_DOUBLE_EQ(f.typical_pair_ratio, 1.0);
  EXPECT_EQ(f.verdict, Verdict::kEqual);
  EXPECT_NE(f.outputs_note.find("timing noise"), std::string::npos) << f.outputs_note;
}

// A recorded setting that differs (here a thread count) can explain a
// slowdown of the same work; the verdict then rests on the interval.
Options WithDifferingSetting() {
  Options o;
  o.differing_settings = {"torch.num_threads: 1 -> 2"};
  return o;
}

TEST(DetectSameWork, EveryPairSlowerIsWaste) {
  Side a = MakeSide("aten::addmm", {130, 125, 135, 130});
  Side b = MakeSide("aten::addmm", {100, 100, 100, 100});
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r, WithDifferingSetting());
  EXPECT_TRUE(f.same_work);
  EXPECT_NEAR(f.typical_pair_ratio, 1.3, 1e-9);
  EXPECT_EQ(f.verdict, Verdict::kWaste);
  EXPECT_EQ(f.wasteful_side, 'A');
  ASSERT_TRUE(f.uncertainty.ratio.known);
  EXPECT_EQ(f.uncertainty.unit, "instances");
  EXPECT_GT(f.uncertainty.ratio.low, 1.1);
}

TEST(DetectSameWork, EveryPairSlowerWithNothingToExplainItIsInconclusive) {
  // The same, but no recorded setting differs and the region is the whole
  // run: one recording per side cannot tell this from a slower machine.
  Side a = MakeSide("aten::addmm", {130, 125, 135, 130});
  Side b = MakeSide("aten::addmm", {100, 100, 100, 100});
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_EQ(f.point_verdict, Verdict::kWaste);
  EXPECT_EQ(f.verdict, Verdict::kInconclusive);
  EXPECT_NE(f.uncertainty_note.find("nothing recorded differs for these ops"), std::string::npos)
      << f.uncertainty_note;
  EXPECT_NE(f.uncertainty_note.find("no other same work"), std::string::npos) << f.uncertainty_note;
  EXPECT_NE(f.uncertainty_note.find("compare -n"), std::string::npos) << f.uncertainty_note;
}

// The same op on the same input with another argument is other work:
// linalg_svd(full_matrices=True) builds an m x m U where False does not.
TEST(DetectSameWork, AnotherArgumentIsOtherWork) {
  Side a = MakeSide("aten::linalg_svd", {400, 400, 400, 400});
  Side b = MakeSide("aten::linalg_svd", {100, 100, 100, 100});
  for (OpEvent& op : a.trace.ops) op.args = R"([{"t":0},true,null])";
  for (OpEvent& op : b.trace.ops) op.args = R"([{"t":0},false,null])";
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_FALSE(f.same_work);
  EXPECT_EQ(f.verdict, Verdict::kWaste) << f.uncertainty_note;
  // The twin: the same arguments on both sides is the same work again.
  for (OpEvent& op : b.trace.ops) op.args = R"([{"t":0},true,null])";
  StatusOr<DetectResult> same = Status::Ok();
  EXPECT_TRUE(Top(a, b, &same).same_work);
}

TEST(DetectSameWork, TooFewPairsIsNotEvidence) {
  Side a = MakeSide("aten::addmm", {200});
  Side b = MakeSide("aten::addmm", {100});
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_EQ(f.paired_ops, 1u);
  EXPECT_EQ(f.verdict, Verdict::kEqual);
  EXPECT_NE(f.outputs_note.find("too few"), std::string::npos) << f.outputs_note;
}

TEST(DetectSameWork, OnePairCarryingTheEnergyIsTooFewPairs) {
  // grad-mode's lm_head region: two views beside one matmul. Three pairs, but
  // the matmul carries the energy, and one slow matmul is a stall, not a cause.
  Side a = MakeSide("aten::linear", {0.5, 0.5, 5200});
  Side b = MakeSide("aten::linear", {0.3, 0.4, 3200});
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_TRUE(f.same_work);
  EXPECT_EQ(f.paired_ops, 3u);
  EXPECT_LT(f.effective_pairs, 1.01);
  EXPECT_NEAR(f.typical_pair_ratio, 5200.0 / 3200.0, 1e-9) << "weighted by energy: the matmul's ratio";
  EXPECT_EQ(f.verdict, Verdict::kEqual);
  EXPECT_NE(f.outputs_note.find("too few"), std::string::npos) << f.outputs_note;
}

TEST(DetectSameWork, BelowTheSameWorkNoiseFloorIsEqual) {
  // Every pair 30% dearer, but the finding is 1.2% of a much larger job.
  Side a = MakeSide("aten::addmm", {130, 130, 130, 130});
  Side b = MakeSide("aten::addmm", {100, 100, 100, 100});
  a.energy.job_uj = b.energy.job_uj = 10000;
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_NEAR(f.share_of_total, 0.012, 1e-12);
  EXPECT_EQ(f.verdict, Verdict::kEqual);
  EXPECT_NE(f.outputs_note.find("noise floor"), std::string::npos) << f.outputs_note;
}

TEST(DetectSameWork, DifferentShapesAreDifferentWork) {
  // Same op names, but A's inputs are twice as tall (padding to the longest):
  // a structural difference, judged on the sum as any other region.
  Side a = MakeSide("aten::addmm", {200}, /*rows=*/8);
  Side b = MakeSide("aten::addmm", {100}, /*rows=*/4);
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r);
  EXPECT_FALSE(f.same_work);
  EXPECT_EQ(f.verdict, Verdict::kWaste);
}

TEST(DetectSameWork, IssueTimeCountsInTheRegion) {
  // Same op time, but A's host code before each op costs 60 more.
  Side a = MakeSide("aten::addmm", {100, 100, 100, 100});
  Side b = MakeSide("aten::addmm", {100, 100, 100, 100});
  for (auto& op : a.energy.ops) op.issue_uj = 60;
  StatusOr<DetectResult> r = Status::Ok();
  const Finding& f = Top(a, b, &r, WithDifferingSetting());
  EXPECT_DOUBLE_EQ(f.a.energy_uj, 640);
  EXPECT_DOUBLE_EQ(f.a.issue_uj, 240);
  EXPECT_NEAR(f.typical_pair_ratio, 1.6, 1e-9);
  EXPECT_EQ(f.verdict, Verdict::kWaste);
}

}  // namespace
}  // namespace magneton::detect
