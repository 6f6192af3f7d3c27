// Subgraph matching on synthetic traces whose tensors carry fingerprints of
// real buffers: same computation, different op decompositions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "match/match.h"
#include "match/valueless_ops.h"
#include "synthetic_trace.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::FakeTensor;
using testing::FingerprintOf;
using testing::SyntheticTrace;

std::vector<float> Random(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// y[i][j] = sum_k x[i][k] * w[j][k] + b[j]   (x: 4x6, w: 8x6, b: 8)
std::vector<float> Linear(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                          bool bias) {
  std::vector<float> y(32);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) {
      float s = bias ? b[j] : 0.f;
      for (int k = 0; k < 6; ++k) s += x[i * 6 + k] * w[j * 6 + k];
      y[i * 8 + j] = s;
    }
  }
  return y;
}

template <typename F>
std::vector<float> Map(std::vector<float> v, F f) {
  for (auto& x : v) x = f(x);
  return v;
}

struct Side {
  Trace trace;
  FingerprintMap fps;
};

struct Inputs {
  std::vector<float> x, w, b;
};

Inputs MakeInputs(uint32_t seed, float x_lo) {
  return {Random(24, seed, x_lo, 1.f), Random(48, seed + 100, 0.f, 1.f), Random(8, seed + 200, 0.f, 1.f)};
}

// A: z = relu(linear(x, W, b)) -- one fused op, then an activation.
Side FusedSide(const Inputs& in, const std::string& name) {
  SyntheticTrace st(testing::TempPath(name));
  FakeTensor x = st.New({4, 6}), w = st.New({8, 6}), b = st.New({8});
  FakeTensor y = st.New({4, 8}), z = st.New({4, 8});
  st.Op("aten::linear", {x, w, b}, {y});
  st.Op("aten::relu", {y}, {z});
  Side s;
  s.trace = st.Finish();
  auto yv = Linear(in.x, in.w, in.b, true);
  s.fps[testing::TensorIdOf(s.trace, x)] = FingerprintOf(in.x, {4, 6});
  s.fps[testing::TensorIdOf(s.trace, w)] = FingerprintOf(in.w, {8, 6});
  s.fps[testing::TensorIdOf(s.trace, b)] = FingerprintOf(in.b, {8});
  s.fps[testing::TensorIdOf(s.trace, y)] = FingerprintOf(yv, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, z)] = FingerprintOf(Map(yv, [](float v) { return std::max(v, 0.f); }), {4, 8});
  return s;
}

// B: the same in transposed layout: Wt = t(W); m = mm(x, Wt); mt = transpose(m);
// yt = add(mt, b[:, None]); zt = act(yt). `act` lets a test make B differ.
Side DecomposedSide(const Inputs& in, const std::string& name, const std::string& act_name, float (*act)(float)) {
  SyntheticTrace st(testing::TempPath(name));
  FakeTensor x = st.New({4, 6}), w = st.New({8, 6}), b = st.New({8, 1});
  FakeTensor wt = SyntheticTrace::View(w, {6, 8}, {1, 6});
  st.Op("aten::t", {w}, {wt});
  FakeTensor m = st.New({4, 8});
  st.Op("aten::mm", {x, wt}, {m});
  FakeTensor mt = SyntheticTrace::View(m, {8, 4}, {1, 8});
  st.Op("aten::transpose", {m}, {mt});
  FakeTensor yt = st.New({8, 4});
  st.Op("aten::add", {mt, b}, {yt});
  FakeTensor zt = st.New({8, 4});
  st.Op(act_name, {yt}, {zt});
  Side s;
  s.trace = st.Finish();
  auto mv = Linear(in.x, in.w, in.b, false);
  auto yv = Linear(in.x, in.w, in.b, true);
  std::vector<float> yt_v(32), zt_v(32);  // stored transposed, contiguous
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) {
      yt_v[j * 4 + i] = yv[i * 8 + j];
      zt_v[j * 4 + i] = act(yv[i * 8 + j]);
    }
  }
  s.fps[testing::TensorIdOf(s.trace, x)] = FingerprintOf(in.x, {4, 6});
  s.fps[testing::TensorIdOf(s.trace, w)] = FingerprintOf(in.w, {8, 6});
  s.fps[testing::TensorIdOf(s.trace, wt)] = FingerprintOf(in.w, {6, 8}, {1, 6});
  s.fps[testing::TensorIdOf(s.trace, b)] = FingerprintOf(in.b, {8, 1});
  s.fps[testing::TensorIdOf(s.trace, m)] = FingerprintOf(mv, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, mt)] = FingerprintOf(mv, {8, 4}, {1, 8});
  s.fps[testing::TensorIdOf(s.trace, yt)] = FingerprintOf(yt_v, {8, 4});
  s.fps[testing::TensorIdOf(s.trace, zt)] = FingerprintOf(zt_v, {8, 4});
  return s;
}

float Relu(float v) { return std::max(v, 0.f); }
float Abs(float v) { return std::fabs(v); }
float Sigmoid(float v) { return 1.f / (1.f + std::exp(-v)); }

std::vector<std::string> Names(const Trace& t, std::span<const int64_t> ops) {
  std::vector<std::string> out;
  for (int64_t id : ops) out.push_back(t.str(t.ops[id].name_id));
  return out;
}

using Strings = std::vector<std::string>;

TEST(MatchRegions, FusedOpMatchesDecomposedOpsWithTranspose) {
  Inputs in = MakeInputs(1, -1.f);
  Side a = FusedSide(in, "a.mtrace");
  Side b = DecomposedSide(in, "b.mtrace", "aten::relu", Relu);
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->regions.size(), 2u);
  const RegionPair& first = r->regions[0];
  EXPECT_EQ(Names(a.trace, first.ops_a), (Strings{"aten::linear"}));
  EXPECT_EQ(Names(b.trace, first.ops_b), (Strings{"aten::t", "aten::mm", "aten::transpose", "aten::add"}));
  EXPECT_TRUE(first.starts_at_model_inputs);
  ASSERT_EQ(first.outputs.size(), 1u);
  EXPECT_EQ(a.trace.tensors[first.outputs[0].a].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(b.trace.tensors[first.outputs[0].b].shape, (std::vector<int64_t>{8, 4}));
  const RegionPair& second = r->regions[1];
  EXPECT_EQ(Names(a.trace, second.ops_a), (Strings{"aten::relu"}));
  EXPECT_EQ(Names(b.trace, second.ops_b), (Strings{"aten::relu"}));
  EXPECT_EQ(second.inputs, first.outputs);
  EXPECT_TRUE(r->unmatched_ops_a.empty());
  EXPECT_TRUE(r->unmatched_ops_b.empty());
}

TEST(MatchRegions, DifferentComputationsDoNotMatch) {
  Inputs in = MakeInputs(2, -1.f);
  Side a = FusedSide(in, "a.mtrace");
  Inputs other = MakeInputs(3, -1.f);  // different weights on B
  other.x = in.x;                      // the same model input
  Side b = DecomposedSide(other, "b.mtrace", "aten::sigmoid", Sigmoid);
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->regions.empty());
  EXPECT_EQ(r->unmatched_ops_a.size(), 2u);
  EXPECT_EQ(r->unmatched_ops_b.size(), 5u);
}

TEST(MatchRegions, ActivationMismatchLeavesOnlyTheLinearPart) {
  Inputs in = MakeInputs(4, -1.f);
  Side a = FusedSide(in, "a.mtrace");
  Side b = DecomposedSide(in, "b.mtrace", "aten::sigmoid", Sigmoid);
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->regions.size(), 1u);
  EXPECT_EQ(Names(a.trace, r->regions[0].ops_a), (Strings{"aten::linear"}));
  EXPECT_EQ(Names(a.trace, r->unmatched_ops_a), (Strings{"aten::relu"}));
  EXPECT_EQ(Names(b.trace, r->unmatched_ops_b), (Strings{"aten::sigmoid"}));
}

TEST(MatchRegions, MultiInputKeepsOnlyRegionsMatchingForAllInputs) {
  // relu and abs agree on non-negative pre-activations only.
  Inputs positive = MakeInputs(5, 0.f);
  Inputs mixed = MakeInputs(6, -1.f);
  mixed.b = Map(mixed.b, [](float v) { return v - 3.f; });  // make some pre-activations negative
  Side a1 = FusedSide(positive, "a1.mtrace"), b1 = DecomposedSide(positive, "b1.mtrace", "aten::abs", Abs);
  Side a2 = FusedSide(mixed, "a2.mtrace"), b2 = DecomposedSide(mixed, "b2.mtrace", "aten::abs", Abs);
  auto single = MatchTraces(a1.trace, a1.fps, b1.trace, b1.fps);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->regions.size(), 2u);  // one input cannot tell relu from abs
  std::vector<TracePairInput> pairs = {{&a1.trace, &a1.fps, &b1.trace, &b1.fps},
                                       {&a2.trace, &a2.fps, &b2.trace, &b2.fps}};
  auto r = MatchAcrossInputs(pairs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->regions.size(), 1u);
  EXPECT_EQ(Names(a1.trace, r->regions[0].ops_a), (Strings{"aten::linear"}));
  EXPECT_EQ(Names(a1.trace, r->unmatched_ops_a), (Strings{"aten::relu"}));
}

// Megatron-543's shape: both sides make k with randn (same seed); A copies it
// with repeat_interleave (repeats == 1), B uses k as it is; then m = x * k for
// the model input x and s = sum(m). The randn pair is a region of its own, so
// the region with the difference holds only the work that differs around it.
Side RandnSide(bool copy_k, const std::string& name) {
  const std::vector<float> k = Random(32, 7, -1.f, 1.f), x = Random(32, 8, -1.f, 1.f);
  std::vector<float> m(32);
  float sum = 0;
  for (size_t i = 0; i < 32; ++i) sum += m[i] = x[i] * k[i];
  SyntheticTrace st(testing::TempPath(name));
  FakeTensor tx = st.New({4, 8}), tk = st.New({4, 8}), tr = st.New({4, 8}), tm = st.New({4, 8}), ts = st.New({});
  st.Op("aten::randn", {}, {tk});
  if (copy_k) st.Op("aten::repeat_interleave", {tk}, {tr});
  st.Op("aten::mul", {tx, copy_k ? tr : tk}, {tm});
  st.Op("aten::sum", {tm}, {ts});
  Side s;
  s.trace = st.Finish();
  s.fps[testing::TensorIdOf(s.trace, tx)] = FingerprintOf(x, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, tk)] = FingerprintOf(k, {4, 8});
  if (copy_k) s.fps[testing::TensorIdOf(s.trace, tr)] = FingerprintOf(k, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, tm)] = FingerprintOf(m, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, ts)] = FingerprintOf({sum}, {});
  return s;
}

TEST(MatchRegions, EqualInputCreationIsItsOwnRegion) {
  Side a = RandnSide(true, "a.mtrace");
  Side b = RandnSide(false, "b.mtrace");
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok());
  int randn_pairs = 0;
  bool saw_copy_region = false;
  for (const RegionPair& rp : r->regions) {
    const Strings na = Names(a.trace, rp.ops_a), nb = Names(b.trace, rp.ops_b);
    if (na == Strings{"aten::randn"} && nb == Strings{"aten::randn"}) ++randn_pairs;
    if (std::find(na.begin(), na.end(), "aten::repeat_interleave") != na.end()) {
      saw_copy_region = true;
      EXPECT_EQ(std::count(na.begin(), na.end(), "aten::randn"), 0) << "input creation left in the region";
      EXPECT_EQ(std::count(nb.begin(), nb.end(), "aten::randn"), 0);
    }
  }
  EXPECT_EQ(randn_pairs, 1);
  EXPECT_TRUE(saw_copy_region);
}

// A weight made the same way on both sides, read first by work that does
// not match (the data differ): padding's model, built alike on both sides
// and read first by batches made differently. No verified region holds the
// init, yet both sides made the same value: it pairs with its twin, and the
// work on different data stays unmatched. Its twin: a weight made
// differently pairs with nothing.
Side WeightThenWorkSide(uint32_t weight_seed, uint32_t data_seed, const std::string& name) {
  const std::vector<float> w = Random(48, weight_seed, -1.f, 1.f), x = Random(24, data_seed, -1.f, 1.f);
  const std::vector<float> y = Linear(x, w, std::vector<float>(8, 0.f), false);
  SyntheticTrace st(testing::TempPath(name));
  FakeTensor tw = st.New({8, 6}), tx = st.New({4, 6}), ty = st.New({4, 8}), tz = st.New({4, 8});
  st.Op("aten::normal_", {}, {tw});
  st.Op("aten::randn", {}, {tx});
  st.Op("aten::linear", {tx, tw}, {ty});
  st.Op("aten::relu", {ty}, {tz});
  Side s;
  s.trace = st.Finish();
  s.fps[testing::TensorIdOf(s.trace, tw)] = FingerprintOf(w, {8, 6});
  s.fps[testing::TensorIdOf(s.trace, tx)] = FingerprintOf(x, {4, 6});
  s.fps[testing::TensorIdOf(s.trace, ty)] = FingerprintOf(y, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, tz)] = FingerprintOf(Map(y, [](float v) { return std::max(v, 0.f); }), {4, 8});
  return s;
}

TEST(MatchRegions, EqualWeightInitOutsideEveryRegionIsPaired) {
  Side a = WeightThenWorkSide(21, 1, "w_a.mtrace");
  Side b = WeightThenWorkSide(21, 2, "w_b.mtrace");
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->regions.size(), 1u);
  EXPECT_EQ(Names(a.trace, r->regions[0].ops_a), Strings{"aten::normal_"});
  EXPECT_EQ(Names(b.trace, r->regions[0].ops_b), Strings{"aten::normal_"});
  EXPECT_EQ(Names(a.trace, r->unmatched_ops_a), (Strings{"aten::randn", "aten::linear", "aten::relu"}));
  EXPECT_EQ(Names(b.trace, r->unmatched_ops_b), (Strings{"aten::randn", "aten::linear", "aten::relu"}));

  Side other = WeightThenWorkSide(22, 2, "w_other.mtrace");
  auto none = MatchTraces(a.trace, a.fps, other.trace, other.fps);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->regions.empty());
  EXPECT_EQ(none->unmatched_ops_a.size(), 4u);
}

// Ops with no value to compare: `item` returns a Python number, so value
// matching cannot place it; it goes with the region of the value it read
// when the other side has its twin there. A source of several results (an
// unbind of the sentence lengths) outside every region pairs with its twin,
// and the items of its results follow it. Twins: without the other side's
// item, the item stays unmatched.
Side ValuelessSide(uint32_t data_seed, bool with_items, const std::string& name) {
  const std::vector<float> x = Random(32, data_seed, -1.f, 1.f);
  const std::vector<float> y = Map(x, [](float v) { return std::max(v, 0.f); });
  SyntheticTrace st(testing::TempPath(name));
  FakeTensor tl0 = st.New({}), tl1 = st.New({}), tx = st.New({4, 8}), ty = st.New({4, 8});
  st.Op("aten::unbind", {}, {tl0, tl1});
  if (with_items) {
    st.Op("aten::item", {tl0}, {});
    st.Op("aten::item", {tl1}, {});
  }
  st.Op("aten::randn", {}, {tx});
  st.Op("aten::relu", {tx}, {ty});
  if (with_items) st.Op("aten::item", {ty}, {});
  Side s;
  s.trace = st.Finish();
  s.fps[testing::TensorIdOf(s.trace, tl0)] = FingerprintOf({17.f}, {});
  s.fps[testing::TensorIdOf(s.trace, tl1)] = FingerprintOf({42.f}, {});
  s.fps[testing::TensorIdOf(s.trace, tx)] = FingerprintOf(x, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, ty)] = FingerprintOf(y, {4, 8});
  return s;
}

TEST(MatchRegions, OpsWithoutValuesGoWithTheRegionTheyRead) {
  Side a = ValuelessSide(31, true, "vl_a.mtrace");
  Side b = ValuelessSide(31, true, "vl_b.mtrace");
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->unmatched_ops_a.empty()) << Names(a.trace, r->unmatched_ops_a).size() << " op(s) of A unmatched, first "
                                          << Names(a.trace, r->unmatched_ops_a).front();
  EXPECT_TRUE(r->unmatched_ops_b.empty());
  for (const RegionPair& rp : r->regions) {
    EXPECT_EQ(Names(a.trace, rp.ops_a), Names(b.trace, rp.ops_b)) << "a region pairs unlike ops";
    EXPECT_TRUE(std::is_sorted(rp.ops_a.begin(), rp.ops_a.end()));
  }

  // The unbind pairs even where the data after it differ (no region holds it).
  Side other_data = ValuelessSide(32, true, "vl_c.mtrace");
  auto r2 = MatchTraces(a.trace, a.fps, other_data.trace, other_data.fps);
  ASSERT_TRUE(r2.ok());
  bool unbind_paired = false;
  for (const RegionPair& rp : r2->regions) {
    if (Names(a.trace, rp.ops_a) == Strings{"aten::unbind", "aten::item", "aten::item"}) {
      unbind_paired = true;
      EXPECT_EQ(Names(other_data.trace, rp.ops_b), (Strings{"aten::unbind", "aten::item", "aten::item"}));
      EXPECT_EQ(rp.outputs.size(), 2u);
    }
  }
  EXPECT_TRUE(unbind_paired);
  EXPECT_EQ(Names(a.trace, r2->unmatched_ops_a), (Strings{"aten::randn", "aten::relu", "aten::item"}));

}

// The attachment itself, on a region given by hand: A's item of the
// region's result joins it when B has an item there too; without B's, it
// stays out, and an item of a value outside the region never joins. A
// `lift_fresh` of a constant (it reads a tensor no op made and hands it
// back: no edge at all) joins the region whose op runs next, when B's runs
// before the same region; B's at the end of the program does not.
TEST(MatchRegions, AValuelessOpNeedsItsTwinBesideTheSameRegion) {
  auto side = [](bool item_of_region, bool item_elsewhere, bool lift_first, const std::string& name) {
    SyntheticTrace st(testing::TempPath(name));
    FakeTensor tx = st.New({4, 8}), ty = st.New({4, 8}), tz = st.New({}), tc = st.New({});
    if (lift_first) st.Op("aten::lift_fresh", {tc}, {tc});
    st.Op("aten::randn", {}, {tx});
    st.Op("aten::relu", {tx}, {ty});
    st.Op("aten::ones", {}, {tz});
    if (item_of_region) st.Op("aten::item", {ty}, {});
    if (item_elsewhere) st.Op("aten::item", {tz}, {});
    if (!lift_first) st.Op("aten::lift_fresh", {tc}, {tc});
    Side s;
    s.trace = st.Finish();
    s.fps[testing::TensorIdOf(s.trace, tx)] = FingerprintOf(Random(32, 5, -1.f, 1.f), {4, 8});
    s.fps[testing::TensorIdOf(s.trace, ty)] = FingerprintOf(Random(32, 6, 0.f, 1.f), {4, 8});
    s.fps[testing::TensorIdOf(s.trace, tz)] = FingerprintOf({1.f}, {});
    return s;
  };
  auto attach = [](const Side& a, const Side& b) {
    auto ga = BuildDataflowGraph(a.trace, {});
    auto gb = BuildDataflowGraph(b.trace, {});
    EXPECT_TRUE(ga.ok() && gb.ok());
    auto node_of = [](const DataflowGraph& g, const Trace& t, const std::string& op) {
      for (int32_t v = 0; v < g.op_count(); ++v)
        if (t.str(t.ops[g.op_ids[v]].name_id) == op) return v;
      return -1;
    };
    MatchResult result;
    RegionPair region;  // randn + relu on both sides
    region.nodes_a = {node_of(*ga, a.trace, "aten::randn"), node_of(*ga, a.trace, "aten::relu")};
    region.nodes_b = {node_of(*gb, b.trace, "aten::randn"), node_of(*gb, b.trace, "aten::relu")};
    for (int32_t v : region.nodes_a) region.ops_a.push_back(ga->op_ids[v]);
    for (int32_t v : region.nodes_b) region.ops_b.push_back(gb->op_ids[v]);
    result.regions.push_back(region);
    match_internal::AttachValuelessOps(*ga, a.fps, *gb, b.fps, &result);
    return result.regions[0];
  };
  Side a = side(true, true, true, "tw_a.mtrace");
  const RegionPair both = attach(a, side(true, true, true, "tw_b.mtrace"));
  EXPECT_EQ(Names(a.trace, both.ops_a), (Strings{"aten::lift_fresh", "aten::randn", "aten::relu", "aten::item"}));
  EXPECT_EQ(both.ops_a.size(), both.ops_b.size());
  const RegionPair without = attach(a, side(false, true, false, "tw_c.mtrace"));
  EXPECT_EQ(Names(a.trace, without.ops_a), (Strings{"aten::randn", "aten::relu"}));
  EXPECT_EQ(without.ops_b.size(), 2u);
}

// pytorch-76012's shape: a script makes x with randn and runs the same work
// on it three times, then sums the last result. A copies x before exp, B
// does not. The iterations share no data, so one dominator path cannot run
// through them: each is paired with the other side's in order, by its output.
Side IterationsSide(bool copy_first, const std::string& name) {
  const std::vector<float> x = Random(32, 11, -1.f, 1.f);
  const std::vector<float> y = Map(x, [](float v) { return std::exp(v); });
  float sum = 0;
  for (float v : y) sum += v;
  SyntheticTrace st(testing::TempPath(name));
  FakeTensor tx = st.New({4, 8});
  st.Op("aten::randn", {}, {tx});
  std::vector<FakeTensor> copies, results;
  for (int i = 0; i < 3; ++i) {
    FakeTensor in = tx;
    if (copy_first) {
      in = st.New({4, 8});
      st.Op("aten::clone", {tx}, {in});
      copies.push_back(in);
    }
    results.push_back(st.New({4, 8}));
    st.Op("aten::exp", {in}, {results.back()});
  }
  FakeTensor ts = st.New({});
  st.Op("aten::sum", {results.back()}, {ts});
  Side s;
  s.trace = st.Finish();
  s.fps[testing::TensorIdOf(s.trace, tx)] = FingerprintOf(x, {4, 8});
  for (const FakeTensor& c : copies) s.fps[testing::TensorIdOf(s.trace, c)] = FingerprintOf(x, {4, 8});
  for (const FakeTensor& r : results) s.fps[testing::TensorIdOf(s.trace, r)] = FingerprintOf(y, {4, 8});
  s.fps[testing::TensorIdOf(s.trace, ts)] = FingerprintOf({sum}, {});
  return s;
}

TEST(MatchRegions, IndependentIterationsArePairedInOrder) {
  Side a = IterationsSide(true, "iter_a.mtrace");
  Side b = IterationsSide(false, "iter_b.mtrace");
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->unmatched_ops_a.empty()) << r->unmatched_ops_a.size() << " op(s) of A unmatched";
  EXPECT_TRUE(r->unmatched_ops_b.empty());
  // exp ops in trace order on each side; each region holds the k-th of both.
  auto exps = [](const Trace& t) {
    std::vector<int64_t> ids;
    for (const OpEvent& op : t.ops)
      if (t.str(op.name_id) == "aten::exp") ids.push_back(op.id);
    return ids;
  };
  const std::vector<int64_t> ea = exps(a.trace), eb = exps(b.trace);
  ASSERT_EQ(ea.size(), 3u);
  int paired = 0;
  for (const RegionPair& rp : r->regions) {
    for (int k = 0; k < 3; ++k) {
      const bool has_a = std::count(rp.ops_a.begin(), rp.ops_a.end(), ea[k]) > 0;
      const bool has_b = std::count(rp.ops_b.begin(), rp.ops_b.end(), eb[k]) > 0;
      EXPECT_EQ(has_a, has_b) << "iteration " << k << " split across regions";
      if (has_a && has_b) {
        ++paired;
        EXPECT_LE(rp.ops_a.size(), 3u) << "iteration " << k << " folded with others";
      }
    }
  }
  EXPECT_EQ(paired, 3);
}

TEST(MatchRegions, TensorIndexFindsPartnersWithoutAllPairs) {
  FingerprintMap a, b;
  for (int i = 0; i < 200; ++i) {
    auto v = Random(64, 1000 + i, -1.f, 1.f + i);
    a[i] = FingerprintOf(v, {8, 8});
    b[1000 + i] = FingerprintOf(v, {8, 8}, {1, 8});  // transposed views
  }
  TensorIndex index(1e-2);
  for (const auto& [id, fp] : b) index.Add(&fp, id);
  std::vector<int64_t> hits;
  for (int i = 0; i < 200; ++i) {
    index.Find(a.at(i), 4, &hits);
    ASSERT_EQ(hits, (std::vector<int64_t>{1000 + i})) << i;
  }
  EXPECT_LT(index.comparisons(), 200 * 20);  // far from 200 * 200
  EXPECT_EQ(FindEquivalentTensors(a, b, 1e-2).size(), 200u);
}

// Equivalent() (the reason-free path) and the index's moment pre-filter must
// decide exactly as CompareFingerprints does, also next to the tolerance:
// copies scaled, shifted and perturbed by amounts on both sides of epsilon.
TEST(MatchRegions, TensorIndexAgreesWithAllPairsNearTheTolerance) {
  FingerprintMap a, b;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> jitter(-1.f, 1.f);
  int64_t id = 0;
  for (int base = 0; base < 12; ++base) {
    const auto v = Random(64, 300 + base, -1.f + 0.3f * base, 1.f);
    a[id++] = FingerprintOf(v, {8, 8});
    for (float rel : {0.f, 0.002f, 0.006f, 0.009f, 0.011f, 0.02f, 0.05f}) {
      std::vector<float> w = v;
      for (float& x : w) x = x * (1.f + rel) + rel * 0.5f * jitter(rng);
      b[id++] = FingerprintOf(w, {8, 8});
    }
  }
  TensorIndex index(1e-2);
  std::vector<int64_t> ids_b;
  for (const auto& [ib, fp] : b) ids_b.push_back(ib);
  std::sort(ids_b.begin(), ids_b.end());
  for (int64_t ib : ids_b) index.Add(&b.at(ib), ib);
  int equivalent_pairs = 0, rejected_pairs = 0;
  std::vector<int64_t> hits;
  for (const auto& [ia, fa] : a) {
    std::vector<int64_t> expected;
    for (int64_t ib : ids_b) {
      const EquivalenceVerdict v = CompareFingerprints(fa, b.at(ib), 1e-2);
      ASSERT_EQ(Equivalent(fa, b.at(ib), 1e-2), v.equivalent) << ia << " vs " << ib;
      ASSERT_EQ(v.reason.empty(), v.equivalent) << v.reason;
      if (v.equivalent) expected.push_back(ib);
    }
    equivalent_pairs += static_cast<int>(expected.size());
    rejected_pairs += static_cast<int>(ids_b.size() - expected.size());
    index.Find(fa, ids_b.size(), &hits);
    EXPECT_EQ(hits, expected) << "tensor " << ia;
    ASSERT_TRUE(index.FindNear(fa, ids_b.size(), 40, &hits));
    EXPECT_EQ(hits, expected) << "tensor " << ia;
  }
  // Both outcomes occur, so the agreement is not vacuous.
  EXPECT_GE(equivalent_pairs, 12 * 2);
  EXPECT_GT(rejected_pairs, equivalent_pairs);
}

// Values that are permutations of one another: the same multiset, so the
// same index cell, told apart only by the strong part (axis marginals).
std::vector<Fingerprint> Shuffles(int count, uint32_t seed) {
  const std::vector<float> base = Random(64, seed, -1.f, 1.f);
  std::vector<Fingerprint> out;
  std::mt19937 rng(seed);
  for (int k = 0; k < count; ++k) {
    std::vector<float> v = base;
    std::shuffle(v.begin(), v.end(), rng);
    out.push_back(FingerprintOf(v, {8, 8}));
  }
  return out;
}

// Ten values repeating in a cycle (a recurrence in a limit cycle), all in one
// cell: FindNear walks nearest entry first and stops at its scan budget,
// saying so.
TEST(MatchRegions, FindNearIsNearestFirstAndStopsAtItsBudget) {
  const std::vector<Fingerprint> shuffles = Shuffles(10, 500);
  FingerprintMap patterns;
  for (int k = 0; k < 10; ++k) patterns[k] = shuffles[static_cast<size_t>(k)];
  auto pattern = [&](int64_t k) -> const StoredFingerprint& { return patterns.at(k); };
  for (int k = 1; k < 10; ++k) ASSERT_FALSE(Equivalent(pattern(0), pattern(k), 1e-2)) << k;
  TensorIndex index(1e-2);
  for (int64_t p = 0; p < 1000; ++p) index.Add(&pattern(p % 10), p);
  std::vector<int64_t> hits;
  EXPECT_TRUE(index.FindNear(pattern(3), 4, 500, &hits));
  EXPECT_EQ(hits, (std::vector<int64_t>{483, 493, 503, 513}));
  // The 5 entries nearest 500 (498..502) hold none of pattern 3.
  EXPECT_FALSE(index.FindNear(pattern(3), 4, 500, &hits, 5));
  EXPECT_TRUE(hits.empty());
  // The 20 nearest (490..509) hold two.
  EXPECT_FALSE(index.FindNear(pattern(3), 4, 500, &hits, 20));
  EXPECT_EQ(hits, (std::vector<int64_t>{493, 503}));
  // Fewer partners than asked for, all seen within the budget: complete.
  EXPECT_TRUE(index.FindNear(pattern(3), 200, 500, &hits, 5000));
  EXPECT_EQ(hits.size(), 100u);
}

// The same long recurrence on both sides, cycling through a few values: the
// lookups run out of their scan budget in the crowded cells, and the
// ordered pass must still pair the runs op for op.
Side CycleSide(int steps, const std::string& name) {
  const std::vector<Fingerprint> values = Shuffles(7, 900);
  SyntheticTrace st(testing::TempPath(name));
  std::vector<FakeTensor> outs;
  FakeTensor x = st.New({8, 8});
  st.Op("aten::randn", {}, {x});
  outs.push_back(x);
  for (int i = 0; i < steps; ++i) {
    FakeTensor y = st.New({8, 8});
    st.Op("aten::tanh", {x}, {y});
    outs.push_back(y);
    x = y;
  }
  Side s;
  s.trace = st.Finish();
  for (size_t i = 0; i < outs.size(); ++i) {
    s.fps[testing::TensorIdOf(s.trace, outs[i])] = values[i % values.size()];
  }
  return s;
}

TEST(MatchRegions, LongCyclingRunPairsOpForOpUnderTheScanBudget) {
  Side a = CycleSide(600, "cycle_a.mtrace");
  Side b = CycleSide(600, "cycle_b.mtrace");
  MatchOptions options;
  options.max_scan_per_lookup = 16;  // far below the ~86 entries of one value
  auto r = MatchTraces(a.trace, a.fps, b.trace, b.fps, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->unmatched_ops_a.empty()) << r->unmatched_ops_a.size() << " op(s) of A unmatched";
  EXPECT_TRUE(r->unmatched_ops_b.empty());
  size_t one_to_one = 0;
  for (const RegionPair& rp : r->regions) {
    ASSERT_EQ(rp.ops_a.size(), rp.ops_b.size()) << "a region pairs " << rp.ops_a.size() << " op(s) with "
                                                << rp.ops_b.size();
    if (rp.ops_a.size() == 1 && rp.ops_a[0] == rp.ops_b[0]) ++one_to_one;
  }
  EXPECT_EQ(one_to_one, a.trace.ops.size());
  // Each lookup compares at most its budget, once: pass 2 looks from where
  // pass 1 did (two runs of one program) and takes pass 1's walk instead of
  // walking it again (20 991 comparisons when it walked twice, 11 391 now);
  // plus the weights of the few candidates kept. Linear in the run.
  EXPECT_LT(r->tensor_comparisons, static_cast<int64_t>(a.trace.ops.size()) * (16 + 8));
}

}  // namespace
}  // namespace magneton
