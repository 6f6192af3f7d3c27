// DetectFromMatch on a hand-built trace pair, attribution and match: repeats
// aggregate, energy outside ops and unmatched ops are regions, ranking.
#include <gtest/gtest.h>

#include <vector>

#include "detect/detect.h"
#include "synthetic_trace.h"

namespace magneton::detect {
namespace {

// A trace whose ops are `names` (all top-level, 1000 ns each, back to back)
// and an attribution that charges op i energies_uj[i]; `idle_uj` outside ops.
struct Side {
  Trace trace;
  energy::Attribution energy;
};

Side MakeSide(const std::vector<std::string>& names, const std::vector<double>& energies_uj, double idle_uj,
              const std::vector<int64_t>& durations_ns = {}) {
  Side s;
  int64_t t = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    s.trace.strings.push_back(names[i]);
    OpEvent op;
    op.id = static_cast<int64_t>(i);
    op.name_id = static_cast<int64_t>(i);
    op.start_ns = t;
    t += durations_ns.empty() ? 1000 : durations_ns[i];
    op.end_ns = t;
    s.trace.ops.push_back(op);
    s.energy.ops.push_back({energies_uj[i], energies_uj[i], op.end_ns - op.start_ns});
    s.energy.attributed_uj += energies_uj[i];
  }
  s.energy.domain = "cpu-estimate";
  s.energy.window_end_ns = t + 500;  // 500 ns with no op
  s.energy.unattributed_uj = idle_uj;
  s.energy.total_uj = s.energy.attributed_uj + idle_uj;
  // All of it inside the job: the idle energy is between ops.
  s.energy.ops_end_ns = t;
  s.energy.job_uj = s.energy.total_uj;
  s.energy.idle_in_job_uj = s.energy.unclaimed_in_job_uj = idle_uj;
  s.energy.idle_in_job_ns = s.energy.unclaimed_in_job_ns = 500;
  return s;
}

Fingerprint Fp(float scale) {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i + 1);
  return testing::FingerprintOf(v, {4, 4});
}

RegionPair Region(std::vector<int64_t> a, std::vector<int64_t> b, int64_t out_a, int64_t out_b) {
  RegionPair r;
  r.ops_a = std::move(a);
  r.ops_b = std::move(b);
  r.outputs.push_back({out_a, out_b});
  return r;
}

class DetectRegions : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two layers: A runs one fused op per layer, B two smaller ops; then relu.
    a_ = MakeSide({"aten::linear", "aten::linear", "aten::relu", "aten::copy_"}, {300, 300, 100, 40}, 50);
    b_ = MakeSide({"aten::mm", "aten::add", "aten::mm", "aten::add", "aten::relu"}, {80, 20, 80, 20, 104}, 50,
                  {400, 100, 400, 100, 1000});
    for (int64_t t = 0; t < 3; ++t) fa_[t] = fb_[t + 10] = Fp(static_cast<float>(t + 1));
    match_.regions.push_back(Region({0}, {0, 1}, 0, 10));
    match_.regions.push_back(Region({1}, {2, 3}, 1, 11));
    match_.regions.push_back(Region({2}, {4}, 2, 12));
    match_.unmatched_ops_a = {3};
  }
  Side a_, b_;
  FingerprintMap fa_, fb_;
  MatchResult match_;
};

TEST_F(DetectRegions, RepeatsAggregateAndRankBySaving) {
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->findings.empty());
  const Finding& top = r->findings[0];
  EXPECT_EQ(top.kind, RegionKind::kMatched);
  EXPECT_EQ(top.verdict, Verdict::kWaste);
  EXPECT_EQ(top.instances.size(), 2u);
  EXPECT_DOUBLE_EQ(top.a.energy_uj, 600);
  EXPECT_DOUBLE_EQ(top.b.energy_uj, 200);
  EXPECT_EQ(top.a.time_ns, 2000);
  EXPECT_EQ(top.b.time_ns, 1000);
  EXPECT_EQ(top.wasteful_side, 'A');
  EXPECT_DOUBLE_EQ(top.saving_uj, 400);
  EXPECT_DOUBLE_EQ(top.energy_ratio, 3.0);
  EXPECT_NEAR(top.share_of_total, 400.0 / 790.0, 1e-12);
  EXPECT_EQ(top.names_b, (std::vector<std::string>{"aten::mm", "aten::add"}));
}

TEST_F(DetectRegions, WithinTauIsEqual) {
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok());
  bool saw_relu = false;
  for (const Finding& f : r->findings) {
    if (f.kind == RegionKind::kMatched && f.names_a == std::vector<std::string>{"aten::relu"}) {
      saw_relu = true;
      EXPECT_EQ(f.verdict, Verdict::kEqual);  // 104 vs 100: 4% < tau
    }
  }
  EXPECT_TRUE(saw_relu);
}

TEST_F(DetectRegions, OutsideOpsAndUnmatchedAreRegions) {
  // A idles much more while no op runs (and none is being issued).
  a_.energy.unattributed_uj = a_.energy.idle_in_job_uj = a_.energy.unclaimed_in_job_uj = 500;
  a_.energy.job_uj = a_.energy.total_uj = a_.energy.attributed_uj + 500;
  // Energy between ops is timing alone: with one recording per side it is a
  // verdict only when a recorded setting differs that could explain it
  // (OneSampleOfEnergyBetweenOpsIsInconclusive is the other half).
  Options o;
  o.differing_settings = {"env.OMP_WAIT_POLICY: PASSIVE -> ACTIVE"};
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, o);
  ASSERT_TRUE(r.ok());
  const Finding* outside = nullptr;
  const Finding* unmatched = nullptr;
  for (const Finding& f : r->findings) {
    if (f.kind == RegionKind::kOutsideOps) outside = &f;
    if (f.kind == RegionKind::kUnmatched) unmatched = &f;
  }
  ASSERT_NE(outside, nullptr);
  EXPECT_DOUBLE_EQ(outside->a.energy_uj, 500);
  EXPECT_DOUBLE_EQ(outside->b.energy_uj, 50);
  EXPECT_EQ(outside->verdict, Verdict::kWaste);
  EXPECT_EQ(r->findings[0].kind, RegionKind::kOutsideOps);  // 450 µJ beats the 400 µJ region
  ASSERT_NE(unmatched, nullptr);
  EXPECT_EQ(unmatched->names_a, std::vector<std::string>{"aten::copy_"});
  EXPECT_TRUE(unmatched->names_b.empty());
  EXPECT_DOUBLE_EQ(unmatched->a.energy_uj, 40);
  EXPECT_EQ(unmatched->verdict, Verdict::kWaste);  // only A does it, and every output still agrees
}

// Extra work splits off the unmatched pool: kinds only A's unmatched ops
// have, while B's unmatched ops have none of their own (B's are start-up
// work both run unmatched); the pool without them is compared as before.
TEST(SplitUnmatched, KindsOnlyOneSideRunsSplitOff) {
  Side a = MakeSide({"c10d::allgather_", "reducer::search", "c10d::allreduce_", "reducer::search", "c10d::broadcast_"},
                    {5000, 10, 30, 10, 100}, 0);
  Side b = MakeSide({"c10d::allgather_", "c10d::broadcast_", "c10d::broadcast_"}, {5100, 90, 90}, 0);
  const UnmatchedSplit s = SplitUnmatched(a.trace, {}, {0, 1, 2, 3, 4}, b.trace, {}, {0, 1, 2}, 0.01);
  EXPECT_EQ(s.extra_a, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(s.extra_b.empty());
  EXPECT_EQ(s.rest_a, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(s.rest_b, (std::vector<int64_t>{0, 1, 2}));

  // Through detection: the extra part is its own one-sided finding, waste; the pool is equal.
  MatchResult m;
  m.unmatched_ops_a = {0, 1, 2, 3, 4};
  m.unmatched_ops_b = {0, 1, 2};
  Options o;
  o.min_share = 0;
  auto r = DetectFromMatch(a.trace, {}, a.energy, b.trace, {}, b.energy, m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<const Finding*> unmatched;
  for (const Finding& f : r->findings) {
    if (f.kind == RegionKind::kUnmatched) unmatched.push_back(&f);
  }
  ASSERT_EQ(unmatched.size(), 2u);
  const Finding* extra = unmatched[0]->names_b.empty() ? unmatched[0] : unmatched[1];
  const Finding* pool = extra == unmatched[0] ? unmatched[1] : unmatched[0];
  EXPECT_EQ(extra->names_a, (std::vector<std::string>{"reducer::search", "c10d::allreduce_", "reducer::search"}));
  EXPECT_DOUBLE_EQ(extra->a.energy_uj, 50);
  EXPECT_EQ(extra->verdict, Verdict::kWaste);
  EXPECT_EQ(pool->names_a, (std::vector<std::string>{"c10d::allgather_", "c10d::broadcast_"}));
  EXPECT_EQ(pool->verdict, Verdict::kEqual);  // 5100 vs 5280
}

// Kinds of their own on both sides may be two ways to one result: no split.
TEST(SplitUnmatched, KindsOfTheirOwnOnBothSidesStayPooled) {
  Side a = MakeSide({"aten::linalg_eigvals", "aten::copy_"}, {10, 1}, 0);
  Side b = MakeSide({"aten::linalg_eigvalsh", "aten::copy_"}, {2, 1}, 0);
  const UnmatchedSplit s = SplitUnmatched(a.trace, {}, {0, 1}, b.trace, {}, {0, 1}, 0.01);
  EXPECT_TRUE(s.extra_a.empty() && s.extra_b.empty());
  EXPECT_EQ(s.rest_a, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.rest_b, (std::vector<int64_t>{0, 1}));
  // The same kinds on both sides (other counts): nothing splits off either.
  Side c = MakeSide({"aten::copy_", "aten::copy_", "aten::copy_"}, {1, 1, 1}, 0);
  const UnmatchedSplit same = SplitUnmatched(c.trace, {}, {0, 1, 2}, b.trace, {}, {1}, 0.01);
  EXPECT_TRUE(same.extra_a.empty() && same.extra_b.empty());
  EXPECT_EQ(same.rest_a.size(), 3u);
}

// An op's tensor links, in the order LinksOf expects them (by op, role, slot).
void Link(Side& s, int64_t op, std::vector<int64_t> inputs, std::vector<int64_t> outputs = {}) {
  int32_t slot = 0;
  for (int64_t t : inputs) s.trace.op_tensors.push_back({op, TensorRole::kInput, slot++, t});
  slot = 0;
  for (int64_t t : outputs) s.trace.op_tensors.push_back({op, TensorRole::kOutput, slot++, t});
}

// A tensor's metadata at its id (element count and dtype are what
// equivalence needs before any value is compared).
void Meta(Side& s, int64_t id, std::vector<int64_t> shape, const std::string& dtype) {
  if (s.trace.tensors.size() <= static_cast<size_t>(id)) s.trace.tensors.resize(id + 1);
  s.trace.tensors[id].id = id;
  s.trace.tensors[id].shape = std::move(shape);
  s.trace.tensors[id].dtype = dtype;
}

// DDP's two pieces of extra work, one per side, on ops of names both run:
// A (find_unused_parameters=True) reads its used-parameter map (int32[192],
// written by the reducer without a recorded op: no fingerprint) with
// select/item after every backward; B rebuilds its buckets once and
// broadcasts the bucket indices (int32[`b_indices`]). Both DDP constructors
// broadcast the same parameters and select/item on the sizes they
// all-gather.
struct DdpPools {
  Side a, b;
  FingerprintMap fa, fb;
};
DdpPools DdpShapedPools(int64_t b_indices) {
  DdpPools p;
  p.a = MakeSide({"c10d::broadcast_", "aten::select.int", "aten::item", "aten::select.int", "aten::item",
                  "reducer::search_unused_parameters"},
                 {100, 10, 10, 10, 10, 5}, 0);
  Link(p.a, 0, {0});        // the parameters
  Link(p.a, 1, {1}, {2});   // the used-parameter map
  Link(p.a, 2, {2});
  Link(p.a, 3, {1}, {3});
  Link(p.a, 4, {3});
  Meta(p.a, 0, {4, 4}, "float32");
  Meta(p.a, 1, {192}, "int32");
  Meta(p.a, 2, {}, "int32");
  Meta(p.a, 3, {}, "int32");
  p.fa = {{0, Fp(1)}, {2, Fp(7)}, {3, Fp(7)}};
  p.b = MakeSide({"c10d::broadcast_", "aten::select.int", "aten::item", "c10d::broadcast_"}, {100, 10, 10, 3}, 0);
  Link(p.b, 0, {0});       // the parameters
  Link(p.b, 1, {1}, {2});  // the all-gathered sizes
  Link(p.b, 2, {2});       // a scalar of the same value as A's items read
  Link(p.b, 3, {3});       // the rebuilt buckets' indices
  Meta(p.b, 0, {4, 4}, "float32");
  Meta(p.b, 1, {2}, "int64");
  Meta(p.b, 2, {}, "int64");
  Meta(p.b, 3, {b_indices}, "int32");
  p.fb = {{0, Fp(1)}, {1, Fp(9)}, {2, Fp(7)}, {3, Fp(11)}};
  return p;
}

// Ops of names the other side also runs are extra work where they read
// other values than any of that name there (A's select of the used map vs
// B's select of the sizes: other element counts, no fingerprint needed) and
// read what extra work wrote (A's items); one piece of extra work per side
// splits off when the two read no common value.
TEST(SplitUnmatched, ExtraWorkOnOtherValuesSplitsOffOnBothSides) {
  DdpPools p = DdpShapedPools(193);
  const UnmatchedSplit s = SplitUnmatched(p.a.trace, p.fa, {0, 1, 2, 3, 4, 5}, p.b.trace, p.fb, {0, 1, 2, 3}, 0.01);
  EXPECT_EQ(s.extra_a, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(s.rest_a, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.extra_b, (std::vector<int64_t>{3}));
  EXPECT_EQ(s.rest_b, (std::vector<int64_t>{0, 1, 2}));
}

// The twin: B's own op reads a value that may be the one A's own ops read
// (the same kind, A's unfingerprinted), so the two may be two ways to one
// result; only the kind B never runs splits off, as by name.
TEST(SplitUnmatched, OwnWorkReadingACommonValueStaysPooled) {
  DdpPools p = DdpShapedPools(192);
  const UnmatchedSplit s = SplitUnmatched(p.a.trace, p.fa, {0, 1, 2, 3, 4, 5}, p.b.trace, p.fb, {0, 1, 2, 3}, 0.01);
  EXPECT_EQ(s.extra_a, (std::vector<int64_t>{5}));
  EXPECT_EQ(s.rest_a, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(s.extra_b.empty());
  EXPECT_EQ(s.rest_b, (std::vector<int64_t>{0, 1, 2, 3}));
}

// A kind both sides run equally often is the same work on other values, not
// extra work: judged by name, nothing splits off.
TEST(SplitUnmatched, SameKindAsOftenOnOtherValuesIsNotExtra) {
  Side a = MakeSide({"aten::select.int", "aten::item"}, {10, 10}, 0);
  Side b = MakeSide({"aten::select.int", "aten::item"}, {10, 10}, 0);
  Link(a, 0, {0}, {1});
  Link(a, 1, {1});
  Link(b, 0, {0}, {1});
  Link(b, 1, {1});
  for (Side* side : {&a, &b}) {
    Meta(*side, 0, {4, 4}, "float32");
    Meta(*side, 1, {}, "float32");
  }
  const FingerprintMap fa{{0, Fp(5)}, {1, Fp(7)}}, fb{{0, Fp(9)}, {1, Fp(3)}};
  const UnmatchedSplit s = SplitUnmatched(a.trace, fa, {0, 1}, b.trace, fb, {0, 1}, 0.01);
  EXPECT_TRUE(s.extra_a.empty() && s.extra_b.empty());
  EXPECT_EQ(s.rest_a.size(), 2u);
  EXPECT_EQ(s.rest_b.size(), 2u);
}

TEST_F(DetectRegions, OneSampleOfEnergyBetweenOpsIsInconclusive) {
  a_.energy.unattributed_uj = a_.energy.idle_in_job_uj = a_.energy.unclaimed_in_job_uj = 500;
  a_.energy.job_uj = a_.energy.total_uj = a_.energy.attributed_uj + 500;
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok());
  const Finding* outside = nullptr;
  for (const Finding& f : r->findings) {
    if (f.kind == RegionKind::kOutsideOps) outside = &f;
  }
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(outside->point_verdict, Verdict::kWaste);
  EXPECT_EQ(outside->verdict, Verdict::kInconclusive);
  EXPECT_FALSE(outside->uncertainty.ratio.known);
  EXPECT_NE(outside->uncertainty_note.find("one sample per side"), std::string::npos) << outside->uncertainty_note;
  // Ranked after the waste findings, before the equal ones.
  EXPECT_EQ(r->findings[0].verdict, Verdict::kWaste);
}

TEST_F(DetectRegions, DisagreeingRepeatMakesTradeOff) {
  fb_[11] = Fp(-7);  // layer 2's outputs differ
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok());
  for (const Finding& f : r->findings) {
    if (f.kind == RegionKind::kMatched && f.instances.size() == 2) {
      EXPECT_EQ(f.verdict, Verdict::kTradeOff);
      EXPECT_FALSE(f.outputs_agree);
      EXPECT_NE(f.outputs_note.find("differ"), std::string::npos);
    }
  }
}

TEST_F(DetectRegions, MinShareSilencesNoise) {
  Options o;
  o.min_share = 0.6;  // the 51% saving is below this floor
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, o);
  ASSERT_TRUE(r.ok());
  for (const Finding& f : r->findings) EXPECT_EQ(f.verdict, Verdict::kEqual);
}

TEST_F(DetectRegions, RefusesMixedProvenance) {
  b_.energy.provenance = Provenance::kMeasured;
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  EXPECT_FALSE(r.ok());
}

// One-time compilation (setup_phase.cc): A compiles f once (marked first),
// runs it, compiles g again (a recompilation) and runs it; B runs one mm
// for f's values. The first compile is a phase of its own, ranked after the
// steady-state waste; the recompilation stays the job's.
class DetectOneTime : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = MakeSide({"jax::compile", "jax::jit(f)", "jax::compile", "jax::jit(g)"}, {1000, 300, 200, 100}, 10);
    a_.trace.ops[0].args = R"({"function":"f","compile_kind":"first"})";
    a_.trace.ops[2].args = R"({"function":"g","compile_kind":"recompile"})";
    b_ = MakeSide({"aten::mm"}, {100}, 10);
    fa_[0] = fb_[10] = Fp(1);
    match_.regions.push_back(Region({1}, {0}, 0, 10));
    match_.unmatched_ops_a = {0, 2, 3};
  }
  Side a_, b_;
  FingerprintMap fa_, fb_;
  MatchResult match_;
};

TEST_F(DetectOneTime, FirstCompilationIsItsOwnPhaseRankedAfterSteadyStateWaste) {
  const PhaseBounds phases = PhasesOf(a_.trace);
  EXPECT_EQ(PhaseOf(a_.trace, phases, 0), Phase::kOneTime);
  EXPECT_EQ(PhaseOf(a_.trace, phases, 2), Phase::kJob);
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Finding* once = nullptr;
  size_t once_rank = 0, first_waste = r->findings.size();
  for (size_t i = 0; i < r->findings.size(); ++i) {
    const Finding& f = r->findings[i];
    if (f.verdict == Verdict::kWaste && first_waste == r->findings.size()) first_waste = i;
    if (f.one_time) once = &f, once_rank = i;
  }
  ASSERT_NE(once, nullptr);
  EXPECT_EQ(once->kind, RegionKind::kUnmatched);
  EXPECT_EQ(once->names_a, std::vector<std::string>{"jax::compile"});
  EXPECT_DOUBLE_EQ(once->a.energy_uj, 1000);
  EXPECT_EQ(once->verdict, Verdict::kWaste);  // still waste, with its energy: ranked, not hidden
  ASSERT_LT(first_waste, r->findings.size());
  EXPECT_FALSE(r->findings[first_waste].one_time);
  EXPECT_GT(once_rank, first_waste);
  // The recompilation is the job's extra work, with the call it preceded.
  bool recompile_in_job = false;
  for (const Finding& f : r->findings) {
    if (f.kind == RegionKind::kUnmatched && !f.one_time && !f.names_a.empty()) {
      recompile_in_job = f.names_a == std::vector<std::string>{"jax::compile", "jax::jit(g)"};
    }
  }
  EXPECT_TRUE(recompile_in_job);
}

TEST_F(DetectOneTime, AnExecutableRunOnceIsTheJobsAndOneRunTwiceIsOneTime) {
  // JAX jit: each compile and each call name their executable; the runs decide.
  a_ = MakeSide({"jax::compile", "jax::jit(f)", "jax::jit(f)", "jax::compile", "jax::jit(g)"}, {1000, 150, 150, 200, 100},
                10);
  a_.trace.ops[0].args = R"({"function":"f","compile_kind":"first","executable":0})";
  a_.trace.ops[1].args = a_.trace.ops[2].args = R"({"hlo_module":"jit_f","executable":0})";
  a_.trace.ops[3].args = R"({"function":"g","compile_kind":"first","executable":1})";
  a_.trace.ops[4].args = R"({"hlo_module":"jit_g","executable":1})";
  const PhaseBounds phases = PhasesOf(a_.trace);
  EXPECT_EQ(PhaseOf(a_.trace, phases, 0), Phase::kOneTime);  // f's executable ran twice: reused
  EXPECT_EQ(PhaseOf(a_.trace, phases, 1), Phase::kJob);
  EXPECT_EQ(PhaseOf(a_.trace, phases, 3), Phase::kJob);  // g's ran once: a compile per run, the job's
  // A "recompile" whose executable is reused is one-time too (JAX: a library function on a second shape).
  a_.trace.ops[0].args = R"({"function":"f","compile_kind":"recompile","executable":0})";
  EXPECT_EQ(PhaseOf(a_.trace, PhasesOf(a_.trace), 0), Phase::kOneTime);
}

TEST_F(DetectOneTime, UnmarkedCompilationCompetesAsJobWork) {
  a_.trace.ops[0].args = R"({"function":"f"})";  // an older trace: no marker
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const Finding& f : r->findings) EXPECT_FALSE(f.one_time);
  const Finding& top = r->findings.front();
  EXPECT_EQ(top.kind, RegionKind::kUnmatched);
  EXPECT_EQ(top.names_a.front(), "jax::compile");
  EXPECT_DOUBLE_EQ(top.a.energy_uj, 1300);
}

// Set-up (setup_phase.cc): ops before the first op inside a module scope.
// Each side: two weight inits (no scope), then the forward (scoped), then one
// more op in the forward that only A runs.
class DetectSetup : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = MakeSide({"aten::normal_", "aten::normal_", "aten::linear", "aten::relu", "aten::copy_"},
                  {50, 50, 300, 100, 40}, 10);
    b_ = MakeSide({"aten::normal_", "aten::normal_", "aten::mm", "aten::relu"}, {50, 50, 100, 100}, 10);
    for (Side* s : {&a_, &b_}) {
      s->trace.scopes.push_back(Scope{});
      for (size_t i = 2; i < s->trace.ops.size(); ++i) s->trace.ops[i].scope_id = 0;
    }
    for (int64_t t = 0; t < 3; ++t) fa_[t] = fb_[t + 10] = Fp(static_cast<float>(t + 1));
    // The matcher puts a weight's init in its first consumer's region: the
    // linear's region starts with both inits.
    match_.regions.push_back(Region({0, 1, 2}, {0, 1, 2}, 0, 10));
    match_.regions.push_back(Region({3}, {3}, 1, 11));
    match_.unmatched_ops_a = {4};
  }
  const Finding* Find(const DetectResult& r, RegionKind kind, bool setup) {
    for (const Finding& f : r.findings) {
      if (f.kind == kind && f.setup == setup) return &f;
    }
    return nullptr;
  }
  Side a_, b_;
  FingerprintMap fa_, fb_;
  MatchResult match_;
};

TEST_F(DetectSetup, FirstScopedOpEndsSetUp) {
  EXPECT_EQ(SetupEndNs(a_.trace), 2000);  // the linear starts at 2000 ns
  const PhaseBounds bounds = PhasesOf(a_.trace);
  EXPECT_EQ(bounds.setup_end_ns, 2000);
  EXPECT_EQ(PhaseOps(a_.trace, std::vector<int64_t>{0, 1, 2, 3}, bounds, Phase::kSetup), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(PhaseOps(a_.trace, std::vector<int64_t>{0, 1, 2, 3}, bounds, Phase::kJob), (std::vector<int64_t>{2, 3}));
}

TEST_F(DetectSetup, ARegionSpanningTheFirstForwardIsSplitThere) {
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Finding* setup = Find(*r, RegionKind::kMatched, true);
  ASSERT_NE(setup, nullptr);
  EXPECT_EQ(setup->names_a, (std::vector<std::string>{"aten::normal_", "aten::normal_"}));
  EXPECT_DOUBLE_EQ(setup->a.energy_uj, 100);
  EXPECT_TRUE(setup->instances.front().outputs.empty());  // the exit cut is the job's
  EXPECT_EQ(setup->verdict, Verdict::kEqual);
  // The forward's finding holds the forward's ops only, with the region's exit.
  const Finding& top = r->findings.front();
  EXPECT_FALSE(top.setup);
  EXPECT_EQ(top.names_a, std::vector<std::string>{"aten::linear"});
  EXPECT_EQ(top.names_b, std::vector<std::string>{"aten::mm"});
  EXPECT_DOUBLE_EQ(top.saving_uj, 200);
  EXPECT_EQ(top.verdict, Verdict::kWaste);
  EXPECT_EQ(top.instances.front().outputs.size(), 1u);
  // Unmatched ops of the forward stay the job's.
  const Finding* unmatched = Find(*r, RegionKind::kUnmatched, false);
  ASSERT_NE(unmatched, nullptr);
  EXPECT_EQ(unmatched->names_a, std::vector<std::string>{"aten::copy_"});
  EXPECT_EQ(Find(*r, RegionKind::kUnmatched, true), nullptr);
}

TEST_F(DetectSetup, SetUpOnOneSideOnlyIsUnmatchedSetUp) {
  // B initialises nothing in this region (its weights came from elsewhere).
  match_.regions[0].ops_b = {2};
  match_.unmatched_ops_b = {0, 1};
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, RegionKind::kMatched, true), nullptr);
  const Finding* setup = Find(*r, RegionKind::kUnmatched, true);
  ASSERT_NE(setup, nullptr);
  EXPECT_EQ(setup->names_a, (std::vector<std::string>{"aten::normal_", "aten::normal_"}));
  EXPECT_EQ(setup->names_b, (std::vector<std::string>{"aten::normal_", "aten::normal_"}));
  for (const Finding& f : r->findings) {
    if (f.setup) continue;
    for (const std::string& n : f.names_a) EXPECT_NE(n, "aten::normal_");
    for (const std::string& n : f.names_b) EXPECT_NE(n, "aten::normal_");
  }
}

TEST_F(DetectSetup, WithoutModuleScopesNothingIsSetUp) {
  for (Side* s : {&a_, &b_}) {
    for (OpEvent& op : s->trace.ops) op.scope_id = kNoId;
  }
  auto r = DetectFromMatch(a_.trace, fa_, a_.energy, b_.trace, fb_, b_.energy, match_, {});
  ASSERT_TRUE(r.ok());
  for (const Finding& f : r->findings) EXPECT_FALSE(f.setup);
  EXPECT_EQ(r->findings.front().names_a,
            (std::vector<std::string>{"aten::normal_", "aten::normal_", "aten::linear"}));
}

}  // namespace
}  // namespace magneton::detect
