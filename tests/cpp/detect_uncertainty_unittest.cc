// The uncertainty step (src/detect/uncertainty.cc): intervals from the
// occurrences inside one recording and from repeated recordings, and the
// verdicts they allow: waste only when the interval clears tau, a run-wide
// slowdown of the same work is the machine's unless a setting differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <string>
#include <vector>

#include "detect/detect.h"
#include "synthetic_trace.h"

namespace magneton::detect {
namespace {

// Two-op regions repeated `energies.size()` times: region k runs op names
// {name_k, name_k} on both sides (same work), costing energies[k] per op.
struct Side {
  Trace trace;
  energy::Attribution energy;
};

Side MakeSide(const std::vector<std::string>& names, const std::vector<double>& energies_uj) {
  Side s;
  TensorMeta input;
  input.id = 0;
  input.shape = {4, 8};
  input.dtype = "float32";
  s.trace.tensors.push_back(input);
  for (size_t i = 0; i < names.size(); ++i) {
    s.trace.strings.push_back(names[i]);
    OpEvent op;
    op.id = static_cast<int64_t>(i);
    op.name_id = static_cast<int64_t>(i);
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
  s.energy.ops_end_ns = s.energy.window_end_ns = static_cast<int64_t>(names.size()) * 1000;
  s.energy.total_uj = s.energy.job_uj = s.energy.attributed_uj;
  return s;
}

Fingerprint Fp() {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return testing::FingerprintOf(v, {4, 4});
}

// Op i of A with op i of B, one region per op.
StatusOr<DetectResult> Detect(const Side& a, const Side& b, const Options& options = {}) {
  MatchResult match;
  FingerprintMap fa, fb;
  for (size_t i = 0; i < a.trace.ops.size(); ++i) {
    RegionPair r;
    r.ops_a = r.ops_b = {static_cast<int64_t>(i)};
    r.outputs.push_back({static_cast<int64_t>(i) + 1, static_cast<int64_t>(i) + 1});
    fa[static_cast<int64_t>(i) + 1] = fb[static_cast<int64_t>(i) + 1] = Fp();
    match.regions.push_back(r);
  }
  return DetectFromMatch(a.trace, fa, a.energy, b.trace, fb, b.energy, match, options);
}

const Finding* Named(const DetectResult& r, const std::string& name) {
  for (const Finding& f : r.findings) {
    if (!f.names_a.empty() && f.names_a.front() == name) return &f;
  }
  return nullptr;
}

// Eight "matmul" ops and eight "softmax" ops on each side.
std::vector<std::string> Names() {
  std::vector<std::string> names(8, "aten::matmul");
  names.insert(names.end(), 8, "aten::softmax");
  return names;
}

std::vector<double> Costs(double matmul_uj, double softmax_uj) {
  std::vector<double> v(8, matmul_uj);
  v.insert(v.end(), 8, softmax_uj);
  return v;
}

TEST(DetectUncertainty, AWholeRunSlowerOnTheSameWorkIsTheMachine) {
  // Every op 50% dearer on A: the signature of a slower run, not of code.
  auto r = Detect(MakeSide(Names(), Costs(150, 75)), MakeSide(Names(), Costs(100, 50)));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->run_wide_ratio, 1.5, 1e-9);
  for (const Finding& f : r->findings) {
    EXPECT_NE(f.verdict, Verdict::kWaste) << f.names_a.front();
    if (f.kind != RegionKind::kMatched) continue;
    EXPECT_EQ(f.point_verdict, Verdict::kWaste);
    EXPECT_EQ(f.verdict, Verdict::kInconclusive);
    EXPECT_NE(f.uncertainty_note.find("nothing recorded differs for these ops"), std::string::npos)
        << f.uncertainty_note;
    // What the machine did to the rest of the run (the other region).
    EXPECT_NE(f.uncertainty_note.find("+50.0% on A typically"), std::string::npos) << f.uncertainty_note;
  }
}

TEST(DetectUncertainty, OneRegionSlowerThanTheRestOfItsRunStillNeedsMoreRuns) {
  // Softmax costs the same, matmul 50% more: region-specific, but all eight
  // occurrences share one machine state, so one recording per side is not
  // enough (RunsThatAgreeAreWaste is the twin with three).
  auto r = Detect(MakeSide(Names(), Costs(150, 50)), MakeSide(Names(), Costs(100, 50)));
  ASSERT_TRUE(r.ok());
  const Finding* matmul = Named(*r, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->point_verdict, Verdict::kWaste);
  EXPECT_EQ(matmul->verdict, Verdict::kInconclusive) << matmul->uncertainty_note;
  ASSERT_TRUE(matmul->uncertainty.ratio.known);
  EXPECT_EQ(matmul->uncertainty.method, "bootstrap");
  EXPECT_EQ(matmul->uncertainty.units, 8u);
  EXPECT_NEAR(matmul->uncertainty.ratio.low, 1.5, 1e-9);  // eight identical instances: no spread
  EXPECT_NEAR(matmul->uncertainty.saving_uj.low, 400, 1e-9);
}

// The twin of OneRegionSlowerThanTheRestOfItsRunStillNeedsMoreRuns: matmul
// 3x where the rest of the run (softmax) is not slower at all clears twice
// what the machine did elsewhere, and one recording per side calls it.
TEST(DetectUncertainty, ARegionFarBeyondTheRestOfItsRunIsWaste) {
  auto r = Detect(MakeSide(Names(), Costs(300, 50)), MakeSide(Names(), Costs(100, 50)));
  ASSERT_TRUE(r.ok());
  const Finding* matmul = Named(*r, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->verdict, Verdict::kWaste) << matmul->uncertainty_note;
  EXPECT_NE(matmul->uncertainty_note.find("beyond 2x what the machine did elsewhere"), std::string::npos)
      << matmul->uncertainty_note;
  // The rest of A's run slowed by up to 1.6x (its 95th percentile pair):
  // 3x is within twice that, and the region stays open.
  std::vector<double> uneven = Costs(300, 50);
  for (size_t i = 8; i < 16; ++i) uneven[i] = i % 2 ? 80 : 50;
  auto noisy = Detect(MakeSide(Names(), uneven), MakeSide(Names(), Costs(100, 50)));
  ASSERT_TRUE(noisy.ok());
  const Finding* noisy_matmul = Named(*noisy, "aten::matmul");
  ASSERT_NE(noisy_matmul, nullptr);
  EXPECT_EQ(noisy_matmul->verdict, Verdict::kInconclusive) << noisy_matmul->uncertainty_note;
  EXPECT_NE(noisy_matmul->uncertainty_note.find("+60.0% at its 95th percentile"), std::string::npos)
      << noisy_matmul->uncertainty_note;
  // A busy costlier side: timing alone is no evidence, however far beyond.
  Side busy_a = MakeSide(Names(), Costs(300, 50)), busy_b = MakeSide(Names(), Costs(100, 50));
  for (Side* side : {&busy_a, &busy_b}) {
    side->trace.meta.extra["machine.others_cpu_share"] = "0.3";
    side->trace.meta.extra["machine.steal_share"] = "0";
  }
  auto busy = Detect(busy_a, busy_b);
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(Named(*busy, "aten::matmul")->verdict, Verdict::kInconclusive);
  EXPECT_NE(Named(*busy, "aten::matmul")->uncertainty_note.find("stall short ops"), std::string::npos)
      << Named(*busy, "aten::matmul")->uncertainty_note;
  // With no other same work in the runs there is nothing to measure the
  // machine by: open, whatever the ratio.
  auto alone = Detect(MakeSide(std::vector<std::string>(8, "aten::matmul"), std::vector<double>(8, 300)),
                      MakeSide(std::vector<std::string>(8, "aten::matmul"), std::vector<double>(8, 100)));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(Named(*alone, "aten::matmul")->verdict, Verdict::kInconclusive);
  EXPECT_NE(Named(*alone, "aten::matmul")->uncertainty_note.find("no other same work"), std::string::npos);
}

// What the region's own ops ran under is evidence: a matmul 1.5x dearer
// under another recorded runtime state is waste from one recording per
// side, while softmax, slower by as much but under the same state, is not;
// and the matmul pairs, being the code's difference, do not count as the
// machine's shift.
TEST(DetectUncertainty, ASameWorkRegionUnderADifferingStateIsWaste) {
  Options o;
  o.region_differences = [](const Trace& a, const std::vector<int64_t>& ops_a, const Trace&,
                            const std::vector<int64_t>&, char) {
    std::vector<std::string> out;
    if (!ops_a.empty() && a.str(a.ops[static_cast<size_t>(ops_a.front())].name_id) == "aten::matmul") {
      out.push_back("runtime state torch.backends.mkldnn.enabled: false -> true");
    }
    return out;
  };
  auto r = Detect(MakeSide(Names(), Costs(150, 75)), MakeSide(Names(), Costs(100, 50)), o);
  ASSERT_TRUE(r.ok());
  const Finding* matmul = Named(*r, "aten::matmul");
  const Finding* softmax = Named(*r, "aten::softmax");
  ASSERT_NE(matmul, nullptr);
  ASSERT_NE(softmax, nullptr);
  ASSERT_EQ(matmul->differences_in_effect.size(), 1u);
  EXPECT_EQ(matmul->verdict, Verdict::kWaste) << matmul->uncertainty_note;
  EXPECT_NE(matmul->uncertainty_note.find("torch.backends.mkldnn.enabled"), std::string::npos);
  EXPECT_TRUE(softmax->differences_in_effect.empty());
  EXPECT_EQ(softmax->verdict, Verdict::kInconclusive) << softmax->uncertainty_note;
  // The run-wide shift is softmax's alone.
  EXPECT_NEAR(r->run_wide_ratio, 1.5, 1e-9);
  auto quiet_rest = Detect(MakeSide(Names(), Costs(400, 50)), MakeSide(Names(), Costs(100, 50)), o);
  ASSERT_TRUE(quiet_rest.ok());
  EXPECT_NEAR(quiet_rest->run_wide_ratio, 1.0, 1e-9);
  // Nothing asked for: the same 1.5x is open.
  auto unasked = Detect(MakeSide(Names(), Costs(150, 50)), MakeSide(Names(), Costs(100, 50)));
  ASSERT_TRUE(unasked.ok());
  EXPECT_EQ(Named(*unasked, "aten::matmul")->verdict, Verdict::kInconclusive);
}

TEST(DetectUncertainty, ARunWideSlowdownASettingExplainsIsWaste) {
  Options o;
  o.differing_settings = {"torch.num_threads: 1 -> 2"};
  auto r = Detect(MakeSide(Names(), Costs(150, 75)), MakeSide(Names(), Costs(100, 50)), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->findings.front().verdict, Verdict::kWaste);
  EXPECT_NE(r->findings.front().uncertainty_note.find("torch.num_threads"), std::string::npos);
}

TEST(DetectUncertainty, AnIntervalThatStraddlesTauIsInconclusive) {
  // The instances disagree: two cost 4x, six cost the same. The point
  // estimate (1.75x) is beyond tau, the interval reaches below it.
  std::vector<std::string> names(8, "aten::conv2d");
  Side a = MakeSide(names, {400, 400, 100, 100, 100, 100, 100, 100});
  Side b = MakeSide(names, std::vector<double>(8, 100));
  // Not the same work (B reads taller inputs), so the verdict rests on the sums.
  for (TensorMeta& t : b.trace.tensors) t.shape = {8, 8};
  auto r = Detect(a, b);
  ASSERT_TRUE(r.ok());
  const Finding* conv = Named(*r, "aten::conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_FALSE(conv->same_work);
  EXPECT_EQ(conv->point_verdict, Verdict::kWaste);
  EXPECT_EQ(conv->verdict, Verdict::kInconclusive);
  EXPECT_LT(conv->uncertainty.ratio.low, 1.1);
  EXPECT_NE(conv->uncertainty_note.find("interval"), std::string::npos) << conv->uncertainty_note;
}

TEST(DetectUncertainty, TheBootstrapIsReproducible) {
  std::vector<std::pair<double, double>> units = {{1, 1}, {2, 1}, {3, 1}, {1, 2}, {5, 1}};
  Interval r1, s1, r2, s2;
  BootstrapRatio(units, true, {}, 42, &r1, &s1);
  BootstrapRatio(units, true, {}, 42, &r2, &s2);
  ASSERT_TRUE(r1.known);
  EXPECT_EQ(r1.low, r2.low);
  EXPECT_EQ(r1.high, r2.high);
  EXPECT_LT(r1.low, 12.0 / 6.0);  // the point ratio lies inside
  EXPECT_GT(r1.high, 12.0 / 6.0);
}

// Past 4 096 units the interval is the delta method's; it must agree with what
// the bootstrap gives on the same kind of data just below that size.
TEST(DetectUncertainty, ManyUnitsGetTheNormalIntervalTheBootstrapWouldGive) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> a_cost(std::log(30.0), 0.4), b_cost(std::log(20.0), 0.3);
  auto draw = [&](size_t n) {
    std::vector<std::pair<double, double>> units;
    for (size_t k = 0; k < n; ++k) units.emplace_back(a_cost(rng), b_cost(rng));
    return units;
  };
  const auto small = draw(4096), large = draw(4097 * 4);
  Interval rs, ss, rl, sl;
  EXPECT_STREQ(BootstrapRatio(small, true, {}, 1, &rs, &ss), "bootstrap");
  EXPECT_STREQ(BootstrapRatio(large, true, {}, 1, &rl, &sl), "delta");
  ASSERT_TRUE(rs.known && rl.known && ss.known && sl.known);
  double sa = 0, sb = 0;
  for (const auto& [a, b] : large) {
    sa += a;
    sb += b;
  }
  // The point estimates lie inside.
  EXPECT_LT(rl.low, sa / sb);
  EXPECT_GT(rl.high, sa / sb);
  EXPECT_LT(sl.low, sa - sb);
  EXPECT_GT(sl.high, sa - sb);
  // Four times the units: half the log width of the ratio's interval (1 / sqrt(4)), and
  // twice the width of the saving's (a sum over four times as many units), within the
  // bootstrap's own resampling error.
  const double log_width_small = std::log(rs.high / rs.low), log_width_large = std::log(rl.high / rl.low);
  EXPECT_NEAR(log_width_large / log_width_small, 0.5, 0.05);
  EXPECT_NEAR((sl.high - sl.low) / (ss.high - ss.low), 2.0, 0.2);
  // Below the size, the bootstrap: its bounds depend on the seed.
  Interval other, unused;
  BootstrapRatio(small, true, {}, 2, &other, &unused);
  EXPECT_NE(other.low, rs.low);
  // Above it, the same interval whatever the seed.
  BootstrapRatio(large, true, {}, 2, &other, &unused);
  EXPECT_EQ(other.low, rl.low);
  EXPECT_EQ(other.high, rl.high);
}

TEST(DetectUncertainty, StudentQuantiles) {
  EXPECT_NEAR(StudentT(0.95, 2), 4.303, 1e-9);
  EXPECT_NEAR(StudentT(0.95, 1000), 1.960, 1e-9);
  EXPECT_NEAR(StudentT(0.90, 4), 2.132, 1e-9);
}

// Repeated recordings: the same reference finding in each run.
DetectResult OneRun(double matmul_a_uj, double matmul_b_uj, const Options& o = {}) {
  auto r = Detect(MakeSide(Names(), Costs(matmul_a_uj, 50)), MakeSide(Names(), Costs(matmul_b_uj, 50)), o);
  EXPECT_TRUE(r.ok());
  return *r;
}

TEST(DetectUncertainty, RunsThatAgreeAreWaste) {
  DetectResult combined = CombineRuns(OneRun(200, 100), {OneRun(190, 100), OneRun(210, 100)}, {});
  EXPECT_EQ(combined.runs, 3u);
  const Finding* matmul = Named(combined, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->verdict, Verdict::kWaste);
  EXPECT_EQ(matmul->uncertainty.method, "t");
  EXPECT_EQ(matmul->uncertainty.unit, "runs");
  EXPECT_EQ(matmul->uncertainty.runs, 3u);
  EXPECT_NEAR(matmul->a.energy_uj, 1600, 1e-9);  // the mean over the runs
  EXPECT_GT(matmul->uncertainty.ratio.low, 1.5);
  EXPECT_LT(matmul->uncertainty.ratio.high, 2.5);
}

DetectResult WithMatmulTimes(DetectResult r, int64_t a_ns, int64_t b_ns) {
  for (Finding& f : r.findings) {
    if (std::find(f.names_a.begin(), f.names_a.end(), "aten::matmul") == f.names_a.end()) continue;
    f.a.time_ns = a_ns;
    f.b.time_ns = b_ns;
  }
  return r;
}

TEST(DetectUncertainty, ACheaperSideSlowerWithinTheRunsNoiseIsNoTradeOff) {
  // B (cheaper) is 6% slower in one run, 1% faster and as fast in the others:
  // the mean is past max_slowdown (a trade-off by the point), the interval not.
  DetectResult noisy = CombineRuns(WithMatmulTimes(OneRun(200, 100), 1000, 1060),
                                   {WithMatmulTimes(OneRun(190, 100), 1000, 990),
                                    WithMatmulTimes(OneRun(210, 100), 1000, 1000)},
                                   {});
  const Finding* matmul = Named(noisy, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->verdict, Verdict::kWaste) << matmul->outputs_note;
  EXPECT_NE(matmul->outputs_note.find("no trade-off"), std::string::npos) << matmul->outputs_note;
  // Twin: 30% slower in every run is a trade-off.
  DetectResult slower = CombineRuns(WithMatmulTimes(OneRun(200, 100), 1000, 1300),
                                    {WithMatmulTimes(OneRun(190, 100), 1000, 1280),
                                     WithMatmulTimes(OneRun(210, 100), 1000, 1320)},
                                    {});
  matmul = Named(slower, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->verdict, Verdict::kTradeOff);
}

TEST(DetectUncertainty, RunsThatDisagreeAreInconclusive) {
  // One run says 2x, the others say nothing: the t interval straddles tau.
  Options o;
  o.differing_settings = {"x: 1 -> 2"};  // so that run 1 alone would be waste
  DetectResult first = OneRun(200, 100, o);
  ASSERT_EQ(Named(first, "aten::matmul")->verdict, Verdict::kWaste);
  DetectResult combined = CombineRuns(std::move(first), {OneRun(100, 100, o), OneRun(105, 100, o)}, o);
  const Finding* matmul = Named(combined, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->point_verdict, Verdict::kWaste);
  EXPECT_EQ(matmul->verdict, Verdict::kInconclusive);
  EXPECT_LT(matmul->uncertainty.ratio.low, 1.0);
}

TEST(DetectUncertainty, ARegionWhoseCutMovedIsStillFoundInTheOtherRun) {
  // kv-cache's decode region: thousands of ops, and where matching cuts it
  // moves by a few ops between runs. Sharing most ops is the same region;
  // sharing none is not.
  auto region = [](std::vector<std::string> names, double a_uj, double b_uj) {
    DetectResult r;
    r.a.job_uj = r.b.job_uj = 1000;
    Finding f;
    f.kind = RegionKind::kMatched;
    f.names_a = f.names_b = std::move(names);
    f.outputs_agree = true;
    f.a = {a_uj, 1000, 0};
    f.b = {b_uj, 1000, 0};
    f.instances.resize(1);
    f.instances.front().a = f.a;
    f.instances.front().b = f.b;
    r.findings.push_back(f);
    return r;
  };
  const std::vector<std::string> ops = {"aten::addmm", "aten::split", "aten::sdpa", "aten::addmm", "aten::gelu"};
  std::vector<std::string> moved = ops;
  moved.push_back("aten::add");  // the cut one op later
  DetectResult combined = CombineRuns(region(ops, 400, 200), {region(moved, 420, 200), region(ops, 380, 200)}, {});
  EXPECT_EQ(combined.findings.front().uncertainty.runs, 3u);
  EXPECT_EQ(combined.findings.front().verdict, Verdict::kWaste);
  // Nothing in common: not found there, which counts as no difference.
  DetectResult other = CombineRuns(region(ops, 400, 200), {region({"aten::relu"}, 400, 200)}, {});
  EXPECT_EQ(other.findings.front().uncertainty.runs, 1u);
  EXPECT_EQ(other.findings.front().verdict, Verdict::kInconclusive);
}

TEST(DetectUncertainty, UnmatchedOpsAreOneFindingPerRunWhateverTheyHold) {
  // Run 2's unmatched ops are not the same list as run 1's: still the same finding.
  auto unmatched = [](std::vector<std::string> names_a, double a_uj) {
    DetectResult r;
    r.a.job_uj = r.b.job_uj = 1000;
    Finding f;
    f.kind = RegionKind::kUnmatched;
    f.names_a = std::move(names_a);
    f.outputs_agree = true;
    f.a.energy_uj = a_uj;
    f.b.energy_uj = 0;
    r.findings.push_back(f);
    return r;
  };
  DetectResult combined = CombineRuns(unmatched({"aten::copy_"}, 300), {unmatched({"aten::copy_", "aten::view"}, 320),
                                                                        unmatched({"aten::copy_"}, 290)},
                                      {});
  ASSERT_EQ(combined.findings.size(), 1u);
  const Finding& f = combined.findings.front();
  EXPECT_EQ(f.uncertainty.runs, 3u);
  EXPECT_NEAR(f.a.energy_uj, 910.0 / 3, 1e-9);
  EXPECT_EQ(f.verdict, Verdict::kWaste);  // only A runs it, in every run
  ASSERT_TRUE(f.uncertainty.saving_uj.known);
  EXPECT_GT(f.uncertainty.saving_uj.low, 250);
}

// The machine's load while each side was recorded (trace meta machine.*).
Side Loaded(Side s, double others_cpu_share) {
  s.trace.meta.extra["machine.others_cpu_share"] = std::to_string(others_cpu_share);
  s.trace.meta.extra["machine.steal_share"] = "0";
  return s;
}

TEST(DetectUncertainty, ACostlierSideRecordedOnABusyMachineIsInconclusive) {
  // A setting differs, so a whole run 1.5x dearer would be waste
  // (ARunWideSlowdownASettingExplainsIsWaste); but other work took half the
  // machine while A ran, which alone can make A up to 1.96x dearer.
  Options o;
  o.differing_settings = {"torch.num_threads: 1 -> 2"};
  auto busy_a = Detect(Loaded(MakeSide(Names(), Costs(150, 75)), 0.5), Loaded(MakeSide(Names(), Costs(100, 50)), 0.02),
                       o);
  ASSERT_TRUE(busy_a.ok());
  EXPECT_NEAR(busy_a->a.machine.others_cpu_share, 0.5, 1e-9);
  EXPECT_NEAR(LoadSlowdownBound(busy_a->a, busy_a->b), 0.98 / 0.5, 1e-9);
  for (const Finding& f : busy_a->findings) {
    if (f.kind != RegionKind::kMatched) continue;
    EXPECT_EQ(f.point_verdict, Verdict::kWaste);
    EXPECT_EQ(f.verdict, Verdict::kInconclusive);
    EXPECT_NE(f.uncertainty_note.find("50% of the machine's CPU time while A was recorded"), std::string::npos)
        << f.uncertainty_note;
  }
  // The busy machine was B's, the cheaper side: A's waste stands.
  auto busy_b = Detect(Loaded(MakeSide(Names(), Costs(150, 75)), 0.02), Loaded(MakeSide(Names(), Costs(100, 50)), 0.5),
                       o);
  ASSERT_TRUE(busy_b.ok());
  EXPECT_EQ(busy_b->findings.front().verdict, Verdict::kWaste);
  // A load that explains at most 1.23x (x 1.1 tau) does not cover 1.5x by
  // its interval. (A region that occurs once has no interval and no mean to
  // bound: tests/python/test_machine_load.py.)
  auto mild = Detect(Loaded(MakeSide(Names(), Costs(150, 75)), 0.2), Loaded(MakeSide(Names(), Costs(100, 50)), 0.02),
                     o);
  ASSERT_TRUE(mild.ok());
  ASSERT_TRUE(mild->findings.front().uncertainty.ratio.known);
  EXPECT_EQ(mild->findings.front().verdict, Verdict::kWaste) << mild->findings.front().uncertainty_note;
  // Both sides busy: the other side's load does not protect a region of the
  // costlier one, which may have met a burst the other's did not (both at
  // 50-67%, solve() on 2 threads came out 4x costlier than inv() + matmul).
  auto both_busy = Detect(Loaded(MakeSide(Names(), Costs(150, 75)), 0.5), Loaded(MakeSide(Names(), Costs(100, 50)), 0.5),
                          o);
  ASSERT_TRUE(both_busy.ok());
  EXPECT_EQ(LoadSlowdownBound(both_busy->a, both_busy->b), 1);  // the jobs' means: no difference
  EXPECT_NEAR(RegionLoadBound(both_busy->a), 2, 1e-9);
  for (const Finding& f : both_busy->findings) {
    if (f.kind != RegionKind::kMatched) continue;
    EXPECT_EQ(f.verdict, Verdict::kInconclusive) << f.uncertainty_note;
    EXPECT_NE(f.uncertainty_note.find("up to 2.00x costlier"), std::string::npos) << f.uncertainty_note;
  }
  // Threads that wait for one another stall while any of them is off its
  // CPU: with two CPUs to use, the bound is the one-thread bound squared.
  Side two_cpus = Loaded(MakeSide(Names(), Costs(150, 75)), 0.5);
  two_cpus.trace.meta.extra["machine.cpus"] = "2";
  auto threaded = Detect(two_cpus, Loaded(MakeSide(Names(), Costs(100, 50)), 0.02), o);
  ASSERT_TRUE(threaded.ok());
  EXPECT_EQ(threaded->a.machine.cpus, 2);
  EXPECT_NEAR(LoadSlowdownBound(threaded->a, threaded->b), (0.98 / 0.5) * (0.98 / 0.5), 1e-9);
  EXPECT_NEAR(RegionLoadBound(threaded->a), 4, 1e-9);
  // A program that runs its ops on one thread (torch.set_num_threads(1), TF's
  // intra-op setting) has no barrier to wait at: the one-thread bound.
  two_cpus.trace.runtime_states.push_back({0, {{"torch.num_threads", "1"}, {"torch.num_interop_threads", "2"}}});
  auto one_thread = Detect(two_cpus, Loaded(MakeSide(Names(), Costs(100, 50)), 0.02), o);
  ASSERT_TRUE(one_thread.ok());
  EXPECT_EQ(one_thread->a.machine.op_threads, 1);
  EXPECT_NEAR(RegionLoadBound(one_thread->a), 2, 1e-9);
  EXPECT_NEAR(LoadSlowdownBound(one_thread->a, one_thread->b), 0.98 / 0.5, 1e-9);
  // TF's default (0: every CPU) says nothing about barriers; nor does a count above the CPUs.
  two_cpus.trace.runtime_states.push_back({1, {{"tf.config.threading.intra_op_parallelism_threads", "0"}}});
  EXPECT_NEAR(RegionLoadBound(Detect(two_cpus, Loaded(MakeSide(Names(), Costs(100, 50)), 0.02), o)->a), 4, 1e-9);
  two_cpus.trace.runtime_states = {{0, {{"tf.config.threading.intra_op_parallelism_threads", "8"}}}};
  EXPECT_NEAR(RegionLoadBound(Detect(two_cpus, Loaded(MakeSide(Names(), Costs(100, 50)), 0.02), o)->a), 4, 1e-9);
  two_cpus.trace.runtime_states.clear();
  // A count no machine has is not read.
  two_cpus.trace.meta.extra["machine.cpus"] = "2x";
  EXPECT_EQ(Detect(two_cpus, Loaded(MakeSide(Names(), Costs(100, 50)), 0.02), o)->a.machine.cpus, 0);
  // A gap under 10% of the machine is drift, not a busy neighbour.
  EXPECT_EQ(LoadSlowdownBound(Detect(Loaded(MakeSide(Names(), Costs(150, 75)), 0.09),
                                     Loaded(MakeSide(Names(), Costs(100, 50)), 0.0), o)->a,
                              SideSummary{}),
            1);
}

// A region that occurs once has no interval, and the load's bound is a
// mean: on the busier costlier side it is inconclusive however large its
// ratio (two spinners made a one-op GPT-2 region 58x costlier against a
// 2.74x bound). The same region is waste when the busy machine was the
// cheaper side's, or when neither was busy.
TEST(DetectUncertainty, ARegionThatOccursOnceOnTheBusierSideIsInconclusiveAtAnyRatio) {
  std::vector<std::string> names, names_b;
  std::vector<double> costs_a, costs_b;
  for (int i = 0; i < 16; ++i) {
    names.push_back("aten::op" + std::to_string(i));
    names_b.push_back(i == 0 ? "aten::other" : names.back());  // op0 runs other ops on B: no same-work pairs
    costs_a.push_back(i == 0 ? 1000 : 100);  // op0: 10x on A, a mild load's bound is 1.23x
    costs_b.push_back(100);
  }
  Options o;
  o.differing_settings = {"torch.num_threads: 1 -> 2"};
  auto verdict_of_op0 = [&](double load_a, double load_b, std::string* note) {
    auto r = Detect(Loaded(MakeSide(names, costs_a), load_a), Loaded(MakeSide(names_b, costs_b), load_b), o);
    EXPECT_TRUE(r.ok());
    const Finding* f = Named(*r, "aten::op0");
    EXPECT_NE(f, nullptr);
    if (f == nullptr) return Verdict::kEqual;
    EXPECT_FALSE(f->uncertainty.ratio.known);
    *note = f->uncertainty_note;
    return f->verdict;
  };
  std::string note;
  EXPECT_EQ(verdict_of_op0(0.2, 0.02, &note), Verdict::kInconclusive);
  EXPECT_NE(note.find("occurs once"), std::string::npos) << note;
  EXPECT_EQ(verdict_of_op0(0.02, 0.2, &note), Verdict::kWaste) << note;
  EXPECT_EQ(verdict_of_op0(0.02, 0.02, &note), Verdict::kWaste) << note;
}

// Energy while no op ran, one recording per side, is inconclusive; on the
// busier side its note names both loads (the process waits for a CPU between
// ops), and only there: a quiet pair's note says nothing of a load.
TEST(DetectUncertainty, EnergyBetweenOpsOnTheBusierSideNamesTheLoad) {
  auto outside_note = [](double load_a, double load_b) {
    Side a = Loaded(MakeSide(Names(), Costs(100, 50)), load_a);
    a.energy.unattributed_uj = a.energy.idle_in_job_uj = a.energy.unclaimed_in_job_uj = 500;
    a.energy.job_uj = a.energy.total_uj = a.energy.attributed_uj + 500;
    a.energy.idle_in_job_ns = a.energy.unclaimed_in_job_ns = 500;
    auto r = Detect(a, Loaded(MakeSide(Names(), Costs(100, 50)), load_b));
    EXPECT_TRUE(r.ok());
    for (const Finding& f : r->findings) {
      if (f.kind != RegionKind::kOutsideOps) continue;
      EXPECT_EQ(f.wasteful_side, 'A');
      EXPECT_EQ(f.verdict, Verdict::kInconclusive) << f.uncertainty_note;
      return f.uncertainty_note;
    }
    ADD_FAILURE() << "no finding for the energy between ops";
    return std::string();
  };
  const std::string busy = outside_note(0.5, 0.02);
  EXPECT_NE(busy.find("energy while no op ran"), std::string::npos) << busy;
  EXPECT_NE(busy.find("50% of the machine's CPU time while A was recorded (2% while B was)"), std::string::npos)
      << busy;
  const std::string quiet = outside_note(0.02, 0.02);
  EXPECT_NE(quiet.find("energy while no op ran"), std::string::npos) << quiet;
  EXPECT_EQ(quiet.find("of the machine's CPU time"), std::string::npos) << quiet;
  // The busy machine was the cheaper side's: nothing to name on A's account.
  EXPECT_EQ(outside_note(0.02, 0.5).find("of the machine's CPU time"), std::string::npos);
}

TEST(DetectUncertainty, RunsThatAgreeOnABusyMachineAreInconclusive) {
  // RunsThatAgreeAreWaste's ~2x, with other work taking 60% of the machine
  // in every run of A: that alone can make A 2.45x dearer.
  auto run = [](double matmul_a_uj, double load_a) {
    auto r = Detect(Loaded(MakeSide(Names(), Costs(matmul_a_uj, 50)), load_a),
                    Loaded(MakeSide(Names(), Costs(100, 50)), 0.02));
    EXPECT_TRUE(r.ok());
    return *r;
  };
  // A recorded setting explains the ratio, so the load's mean bound is what
  // holds (timing alone on the busier side is inconclusive at any ratio).
  Options explained;
  explained.differing_settings = {"torch.num_threads: 1 -> 2"};
  DetectResult busy = CombineRuns(run(200, 0.6), {run(190, 0.55), run(210, 0.65)}, explained);
  EXPECT_NEAR(busy.a.machine.others_cpu_share, 0.6, 1e-9);  // the mean over runs
  const Finding* matmul = Named(busy, "aten::matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->verdict, Verdict::kInconclusive);
  EXPECT_NE(matmul->uncertainty_note.find("by its interval"), std::string::npos) << matmul->uncertainty_note;
  // The same runs on a quiet machine: waste.
  DetectResult quiet = CombineRuns(run(200, 0.02), {run(190, 0.03), run(210, 0.01)}, {});
  EXPECT_EQ(Named(quiet, "aten::matmul")->verdict, Verdict::kWaste);
  // A mild load (mean effect at most 1.23x) does not cover an interval of ~2x
  // where a recorded setting explains it: waste. With timing the only
  // evidence, the busier side is inconclusive at any ratio
  // (ShortOpsOnTheBusierSideAreInconclusiveAtAnyRatioOverRuns).
  DetectResult mild = CombineRuns(run(200, 0.2), {run(190, 0.2), run(210, 0.2)}, explained);
  ASSERT_TRUE(Named(mild, "aten::matmul")->uncertainty.ratio.known);
  EXPECT_EQ(Named(mild, "aten::matmul")->verdict, Verdict::kWaste) << Named(mild, "aten::matmul")->uncertainty_note;
  DetectResult mild_timing = CombineRuns(run(200, 0.2), {run(190, 0.2), run(210, 0.2)}, {});
  EXPECT_EQ(Named(mild_timing, "aten::matmul")->verdict, Verdict::kInconclusive);
}

// Beside two spinners (55-58% of a 2-core machine against under 1%) a
// same-work region of sub-millisecond ops on 2 threads came out 18-27x
// costlier in each of three runs, against a 5.4x mean bound: every run had
// the neighbour, so the runs agreeing says nothing about the code. Timing
// alone on the busier side is inconclusive at any ratio over runs, as in one
// recording per side. Twins: the same 20x is waste when both sides shared
// the load (interleaved runs), when the cheaper side was the busy one, on a
// quiet machine, and when a recorded setting explains it (the mean bound).
TEST(DetectUncertainty, ShortOpsOnTheBusierSideAreInconclusiveAtAnyRatioOverRuns) {
  auto verdict = [](double load_a, double load_b, const Options& o, std::string* note) {
    auto run = [&](double matmul_a_uj) {
      Side a = Loaded(MakeSide(Names(), Costs(matmul_a_uj, 50)), load_a);
      Side b = Loaded(MakeSide(Names(), Costs(100, 50)), load_b);
      for (Side* s : {&a, &b}) s->trace.meta.extra["machine.cpus"] = "2";
      auto r = Detect(a, b, o);
      EXPECT_TRUE(r.ok());
      return *r;
    };
    DetectResult r = CombineRuns(run(2000), {run(1900), run(2100)}, o);
    const Finding* matmul = Named(r, "aten::matmul");
    EXPECT_NE(matmul, nullptr);
    if (matmul == nullptr) return Verdict::kEqual;
    EXPECT_TRUE(matmul->same_work);
    EXPECT_EQ(matmul->wasteful_side, 'A');
    *note = matmul->uncertainty_note;
    return matmul->verdict;
  };
  const Options timing_only;
  std::string note;
  EXPECT_EQ(verdict(0.57, 0.003, timing_only, &note), Verdict::kInconclusive);
  EXPECT_NE(note.find("by any amount"), std::string::npos) << note;
  EXPECT_NE(note.find("57% of the machine's CPU time while A"), std::string::npos) << note;
  EXPECT_NE(note.find("compare -n 3"), std::string::npos) << note;
  EXPECT_EQ(verdict(0.57, 0.57, timing_only, &note), Verdict::kWaste) << note;  // 20x beyond the 5.4x mean bound
  EXPECT_EQ(verdict(0.003, 0.57, timing_only, &note), Verdict::kWaste) << note;
  EXPECT_EQ(verdict(0.003, 0.003, timing_only, &note), Verdict::kWaste) << note;
  Options explained;
  explained.differing_settings = {"torch.num_threads: 1 -> 2"};
  EXPECT_EQ(verdict(0.57, 0.003, explained, &note), Verdict::kWaste) << note;
}

TEST(DetectUncertainty, RunsAtUnevenLoadsAreBoundByEachRunsLoad) {
  // The region's ratio over runs is a mean of log ratios; what the load can
  // do to it is the mean of each run's log bound, which the bound at the mean
  // load understates (the bound is convex in the load): runs at 10% and 80%
  // allow sqrt(1/0.9 * 1/0.2) = 2.36x, not 1/0.55 = 1.82x.
  auto run = [](double load_a) {
    auto r = Detect(Loaded(MakeSide(Names(), Costs(200, 50)), load_a), Loaded(MakeSide(Names(), Costs(100, 50)), 0.02));
    EXPECT_TRUE(r.ok());
    return *r;
  };
  DetectResult uneven = CombineRuns(run(0.1), {run(0.8)}, {});
  EXPECT_NEAR(uneven.a.machine.Total(), 0.45, 1e-9);
  EXPECT_NEAR(RegionLoadBound(uneven.a), std::sqrt(1 / 0.9 * 1 / 0.2), 1e-9);
  EXPECT_NEAR(LoadSlowdownBound(uneven.a, uneven.b), std::sqrt(1 / 0.9 * 1 / 0.2) * 0.98, 1e-9);
  // Runs at one load: the bound at that load, as for one run.
  DetectResult even = CombineRuns(run(0.45), {run(0.45)}, {});
  EXPECT_NEAR(RegionLoadBound(even.a), 1 / 0.55, 1e-9);
  EXPECT_NEAR(RegionLoadBound(run(0.45).a), 1 / 0.55, 1e-9);
}

}  // namespace
}  // namespace magneton::detect
