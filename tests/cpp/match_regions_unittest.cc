// Subgraph matching on synthetic traces whose tensors carry fingerprints of
// real buffers: same computation, different op decompositions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "match/match.h"
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

std::vector<std::string> Names(const Trace& t, const std::vector<int64_t>& ops) {
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
    index.Find(a[i], 4, &hits);
    ASSERT_EQ(hits, (std::vector<int64_t>{1000 + i})) << i;
  }
  EXPECT_LT(index.comparisons(), 200 * 20);  // far from 200 * 200
  EXPECT_EQ(FindEquivalentTensors(a, b, 1e-2).size(), 200u);
}

}  // namespace
}  // namespace magneton
