// Dataflow edges, tensor origins and (post-)dominators on hand-built traces.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <tuple>

#include "graph/graph.h"
#include "synthetic_trace.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::FakeTensor;
using testing::SyntheticTrace;

// x -> a=op1(x, W) -> b=op2(a), c=op3(a) -> d=op4(b, c); op3 is an in-place
// add on a's storage (new version), op2 reads a view of a.
struct Diamond {
  Trace trace;
  FakeTensor x, w, a, av, b, c, d;
};

Diamond MakeDiamond() {
  Diamond t;
  SyntheticTrace st(testing::TempPath("diamond.mtrace"));
  t.x = st.New({4, 8});
  t.w = st.New({8, 8});
  t.a = st.New({4, 8});
  st.Op("aten::linear", {t.x, t.w}, {t.a}, [&] { st.Op("aten::mm", {t.x, t.w}, {t.a}); });
  t.av = SyntheticTrace::View(t.a, {8, 4}, {1, 8});
  st.Op("aten::t", {t.a}, {t.av});
  t.b = st.New({8, 4});
  st.Op("aten::relu", {t.av}, {t.b});
  t.c = t.a;
  t.c.version = 1;  // in-place: same storage, next version
  st.Op("aten::add_", {t.a}, {t.c});
  t.d = st.New({8, 4});
  st.Op("aten::mul", {t.b, t.c}, {t.d});
  t.trace = st.Finish();
  return t;
}

TEST(GraphDominators, EdgesFollowTensorIdsThroughViewsAndInPlace) {
  Diamond t = MakeDiamond();
  auto g = BuildDataflowGraph(t.trace);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->op_count(), 5);  // the nested mm is folded into linear
  const int64_t a_id = testing::TensorIdOf(t.trace, t.a);
  const int64_t c_id = testing::TensorIdOf(t.trace, t.c);
  EXPECT_NE(a_id, c_id);  // in-place made a new version
  // Edges between op nodes, as (from, to, tensor).
  auto has_edge = [&](int32_t from, int32_t to, int64_t tensor) {
    for (const GraphEdge& e : g->edges) {
      if (e.from == from && e.to == to && e.tensor_id == tensor) return true;
    }
    return false;
  };
  EXPECT_TRUE(has_edge(0, 1, a_id));                                     // linear -> t
  EXPECT_TRUE(has_edge(1, 2, testing::TensorIdOf(t.trace, t.av)));       // t (view) -> relu
  EXPECT_TRUE(has_edge(0, 3, a_id));                                     // linear -> add_
  EXPECT_TRUE(has_edge(3, 4, c_id));                                     // add_ (new version) -> mul
  EXPECT_TRUE(has_edge(4, g->sink(), testing::TensorIdOf(t.trace, t.d)));
  EXPECT_TRUE(has_edge(g->source(), 0, testing::TensorIdOf(t.trace, t.x)));
  EXPECT_EQ(g->origin.at(testing::TensorIdOf(t.trace, t.x)), TensorOrigin::kModelInput);
  EXPECT_EQ(g->origin.at(testing::TensorIdOf(t.trace, t.w)), TensorOrigin::kParameter);
  EXPECT_EQ(g->origin.at(a_id), TensorOrigin::kProduced);
  for (bool dep : g->input_dependent) EXPECT_TRUE(dep);
}

// The graph's per-node lists are compressed rows: each node's edges are the
// edges that leave (enter) it in the order they were added, its inputs the
// tensors of its incoming data edges; NodeOfOp folds nested ops into nodes.
TEST(GraphDominators, NodeListsHoldEachNodesEdgesInOrder) {
  Diamond t = MakeDiamond();
  auto g = BuildDataflowGraph(t.trace);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->out_edges.size(), static_cast<size_t>(g->node_count()));
  ASSERT_EQ(g->in_edges.size(), static_cast<size_t>(g->node_count()));
  size_t listed = 0;
  for (int32_t v = 0; v < g->node_count(); ++v) {
    std::vector<int32_t> out, in;
    for (size_t e = 0; e < g->edges.size(); ++e) {
      if (g->edges[e].from == v) out.push_back(static_cast<int32_t>(e));
      if (g->edges[e].to == v) in.push_back(static_cast<int32_t>(e));
    }
    EXPECT_EQ(std::vector<int32_t>(g->out_edges[v].begin(), g->out_edges[v].end()), out) << "node " << v;
    EXPECT_EQ(std::vector<int32_t>(g->in_edges[v].begin(), g->in_edges[v].end()), in) << "node " << v;
    listed += out.size();
  }
  EXPECT_EQ(listed, g->edges.size());
  // linear's nested mm is folded into linear's node; the last op reads b and c.
  EXPECT_EQ(g->NodeOfOp(1), g->NodeOfOp(0));
  EXPECT_EQ(g->NodeOfOp(999), -1);
  const int32_t last = g->op_count() - 1;
  std::vector<int64_t> read(g->inputs[last].begin(), g->inputs[last].end());
  EXPECT_EQ(read, (std::vector<int64_t>{testing::TensorIdOf(t.trace, t.b), testing::TensorIdOf(t.trace, t.c)}));
  EXPECT_EQ(std::vector<int64_t>(g->outputs[last].begin(), g->outputs[last].end()), std::vector<int64_t>{testing::TensorIdOf(t.trace, t.d)});

  NodeLists<int> lists;
  const std::vector<int> node = {2, -1, 0, 2, 0};
  ASSERT_TRUE(lists.Group(4, node.size(), [&](size_t i) { return node[i]; }, [](size_t i) { return 10 * int(i); }));
  EXPECT_EQ(std::vector<int>(lists[0].begin(), lists[0].end()), (std::vector<int>{20, 40}));
  EXPECT_TRUE(lists[1].empty());
  EXPECT_EQ(std::vector<int>(lists[2].begin(), lists[2].end()), (std::vector<int>{0, 30}));
  EXPECT_TRUE(lists[3].empty());
  EXPECT_EQ(lists.value_count(), 4u);  // the item left out (-1) is in no list
}

// A reader's op ids are their indices, and the graph then looks ops up by
// id directly; a Trace whose ids are not (built by hand, or renumbered) takes
// the map path and gives the very same graph.
TEST(GraphDominators, OpIdsThatAreNotIndicesGiveTheSameGraph) {
  Diamond t = MakeDiamond();
  Trace renumbered = t.trace;
  constexpr int64_t kOffset = 1000;
  auto shift = [](int64_t id) { return id == kNoId ? kNoId : id + kOffset; };
  for (OpEvent& op : renumbered.ops) {
    op.id = shift(op.id);
    op.parent_id = shift(op.parent_id);
  }
  for (OpTensor& l : renumbered.op_tensors) l.op_id = shift(l.op_id);
  for (TensorMeta& m : renumbered.tensors) m.producer_op_id = shift(m.producer_op_id);
  auto g = BuildDataflowGraph(t.trace);
  auto h = BuildDataflowGraph(renumbered);
  ASSERT_TRUE(g.ok() && h.ok());
  ASSERT_EQ(h->op_count(), g->op_count());
  ASSERT_EQ(h->edges.size(), g->edges.size());
  for (size_t e = 0; e < g->edges.size(); ++e) {
    EXPECT_EQ(std::tie(h->edges[e].from, h->edges[e].to, h->edges[e].tensor_id),
              std::tie(g->edges[e].from, g->edges[e].to, g->edges[e].tensor_id)) << "edge " << e;
  }
  for (int32_t v = 0; v < g->op_count(); ++v) EXPECT_EQ(h->op_ids[v], g->op_ids[v] + kOffset);
  EXPECT_EQ(h->NodeOfOp(1 + kOffset), g->NodeOfOp(1));  // the nested mm, folded into linear
  EXPECT_EQ(h->NodeOfOp(1), -1);
  EXPECT_EQ(h->input_dependent, g->input_dependent);
  EXPECT_EQ(h->main_flow, g->main_flow);
  for (const TensorMeta& m : t.trace.tensors) EXPECT_EQ(h->origin.find(m.id), g->origin.find(m.id)) << m.id;
}

// Origins by tensor id: the trace's ids in an array, any other id beside it.
TEST(GraphDominators, TensorOriginsKeepEveryIdInOrOutOfTheTrace) {
  TensorOrigins o;
  o.Reset(4);
  EXPECT_TRUE(o.emplace(2, TensorOrigin::kModelInput));
  EXPECT_TRUE(o.emplace(70, TensorOrigin::kModelInput));  // beyond the trace's 4 tensors
  EXPECT_TRUE(o.emplace(-5, TensorOrigin::kProduced));
  EXPECT_FALSE(o.emplace(2, TensorOrigin::kParameter));  // has one: kept, as map::emplace
  EXPECT_EQ(o.at(2), TensorOrigin::kModelInput);
  o.assign(2, TensorOrigin::kParameter);
  o.assign(70, TensorOrigin::kParameter);
  o.assign(3, TensorOrigin::kParameter);  // has none: stays without one
  EXPECT_EQ(o.find(2), TensorOrigin::kParameter);
  EXPECT_EQ(o.find(70), TensorOrigin::kParameter);
  EXPECT_EQ(o.find(-5), TensorOrigin::kProduced);
  EXPECT_FALSE(o.contains(3));
  EXPECT_FALSE(o.contains(0));
  EXPECT_THROW(o.at(0), std::out_of_range);
  EXPECT_EQ(o.size(), 3u);
  std::map<int64_t, TensorOrigin> seen;
  o.ForEach([&](int64_t id, TensorOrigin origin) { seen.emplace(id, origin); });
  EXPECT_EQ(seen, (std::map<int64_t, TensorOrigin>{
                      {-5, TensorOrigin::kProduced}, {2, TensorOrigin::kParameter}, {70, TensorOrigin::kParameter}}));
}

TEST(GraphDominators, RecorderOpsAreNotNodes) {
  SyntheticTrace st(testing::TempPath("recorder_op.mtrace"));
  FakeTensor x = st.New({4, 8}), y = st.New({4, 8}), z = st.New({4, 8});
  st.Op("jax::exp", {x}, {y});
  st.Op("magneton::jax_warmup", {}, {});
  st.Op("jax::log", {y}, {z});
  Trace trace = st.Finish();
  auto g = BuildDataflowGraph(trace);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->op_count(), 2);
  EXPECT_EQ(g->op_ids, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(g->NodeOfOp(1), -1);
}

TEST(GraphDominators, DominatorsAndPostDominatorsOfADiamond) {
  Diamond t = MakeDiamond();
  auto g = BuildDataflowGraph(t.trace);
  ASSERT_TRUE(g.ok());
  DominatorTree dom = ComputeDominators(*g);
  EXPECT_EQ(dom.root, g->source());
  EXPECT_EQ(dom.idom[0], g->source());
  EXPECT_EQ(dom.idom[1], 0);
  EXPECT_EQ(dom.idom[3], 0);
  EXPECT_EQ(dom.idom[4], 0);  // two branches meet: linear dominates mul
  EXPECT_EQ(dom.idom[g->sink()], 4);
  EXPECT_TRUE(dom.Dominates(0, 2));
  EXPECT_FALSE(dom.Dominates(1, 4));
  EXPECT_EQ(dom.PathFromRoot(g->sink()), (std::vector<int32_t>{g->source(), 0, 4, g->sink()}));

  DominatorTree post = ComputePostDominators(*g);
  EXPECT_EQ(post.root, g->sink());
  EXPECT_EQ(post.idom[0], 4);  // every path from linear goes through mul
  EXPECT_EQ(post.idom[1], 2);
  EXPECT_EQ(post.idom[g->source()], 0);
}

TEST(GraphDominators, LeafModeUsesInnermostOps) {
  Diamond t = MakeDiamond();
  auto g = BuildDataflowGraph(t.trace, GraphOptions{.leaf_ops = true});
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->op_count(), 5);  // linear replaced by its mm
  EXPECT_EQ(t.trace.str(t.trace.ops[g->op_ids[0]].name_id), "aten::mm");
  DominatorTree dom = ComputeDominators(*g);
  EXPECT_EQ(dom.idom[g->sink()], 4);
}

TEST(GraphDominators, WeightPreprocessingIsNotInputDependent) {
  SyntheticTrace st(testing::TempPath("wt.mtrace"));
  FakeTensor x = st.New({4, 6}), w = st.New({8, 6});
  FakeTensor wt = SyntheticTrace::View(w, {6, 8}, {1, 6});
  st.Op("aten::t", {w}, {wt});
  FakeTensor y = st.New({4, 8});
  st.Op("aten::mm", {x, wt}, {y});
  Trace trace = st.Finish();
  auto g = BuildDataflowGraph(trace);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->op_count(), 2);
  // w is read at slot 0 of t(), but t() has no model input: still not dependent.
  EXPECT_FALSE(g->input_dependent[0]);
  EXPECT_TRUE(g->input_dependent[1]);
}

TEST(GraphDominators, SmallFloatConstantsBesideLargeDataAreNotModelInputs) {
  // JAX's expm: digitize(norm(x), thresholds) with a literal 2-float array.
  SyntheticTrace st(testing::TempPath("const.mtrace"));
  FakeTensor x = st.New({4, 16, 16}), thresholds = st.New({2});
  FakeTensor norm = st.New({4}), c = st.New({2}), idx = st.New({4}, "int32");
  st.Op("jax::reduce_max", {x}, {norm});
  st.Op("jax::convert_element_type", {thresholds}, {c});
  st.Op("jax::digitize", {norm, c}, {idx});
  Trace trace = st.Finish();
  auto g = BuildDataflowGraph(trace);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->origin.at(testing::TensorIdOf(trace, x)), TensorOrigin::kModelInput);
  EXPECT_EQ(g->origin.at(testing::TensorIdOf(trace, thresholds)), TensorOrigin::kParameter);
  EXPECT_TRUE(g->main_flow[0]);
  EXPECT_FALSE(g->main_flow[1]);  // the constant is no second flow of data
  // Alone (no larger data beside it), a small float array stays data.
  SyntheticTrace small(testing::TempPath("const_alone.mtrace"));
  FakeTensor v = small.New({2}), w = small.New({2});
  small.Op("jax::sin", {v}, {w});
  Trace alone = small.Finish();
  auto ga = BuildDataflowGraph(alone);
  ASSERT_TRUE(ga.ok());
  EXPECT_EQ(ga->origin.at(testing::TensorIdOf(alone, v)), TensorOrigin::kModelInput);
}

TEST(GraphDominators, EmptyTraceHasSourceToSink) {
  Trace trace;
  auto g = BuildDataflowGraph(trace);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->op_count(), 0);
  DominatorTree dom = ComputeDominators(*g);
  EXPECT_EQ(dom.idom[g->sink()], g->source());
}


// --- Hostile parent links (issue 33). The reader refuses them; a Trace built
// in memory may still carry them, and every walk up the op tree must end.

// `n` ops on one thread, names cycling through `names`, no tensors.
Trace OpsOnly(size_t n, std::vector<std::string> names = {"aten::relu"}) {
  Trace t;
  t.strings = std::move(names);
  for (size_t i = 0; i < n; ++i) {
    OpEvent op;
    op.id = static_cast<int64_t>(i);
    op.name_id = static_cast<int64_t>(i % t.strings.size());
    op.start_ns = static_cast<int64_t>(i);
    op.end_ns = static_cast<int64_t>(i) + 1;
    t.ops.push_back(op);
  }
  return t;
}

// Self parents, a parent cycle and later parents: main spun forever on the
// walk to each op's root. A link to the op itself or a later op counts as no
// parent, in both modes.
TEST(GraphDominators, SelfAndLaterParentsEndAndCountAsNone) {
  Trace t = OpsOnly(6);
  t.ops[1].parent_id = 1;  // itself
  t.ops[2].parent_id = 3;  // 2 -> 3 -> 2: a cycle
  t.ops[3].parent_id = 2;  // (3's parent 2 is earlier: a real link)
  t.ops[4].parent_id = 5;  // a later op
  t.ops[5].parent_id = 0;
  for (bool leaf : {false, true}) {
    auto g = BuildDataflowGraph(t, GraphOptions{.leaf_ops = leaf});
    ASSERT_TRUE(g.ok()) << g.status().message();
    if (!leaf) {
      EXPECT_EQ(g->op_ids, (std::vector<int64_t>{0, 1, 2, 4}));
      EXPECT_EQ(g->NodeOfOp(3), 2);  // folded into its (earlier) parent's node
      EXPECT_EQ(g->NodeOfOp(5), 0);
    } else {
      EXPECT_EQ(g->op_ids, (std::vector<int64_t>{1, 3, 4, 5}));  // leaves: ops nothing earlier encloses
      EXPECT_EQ(g->NodeOfOp(0), 3);  // op 0's last leaf is 5
    }
    DominatorTree dom = ComputeDominators(*g);
    EXPECT_EQ(dom.idom[g->sink()], g->source());
  }
}

// A chain 100 000 deep under a recorder op (no node above it): each op took
// its whole chain to resolve, 5e9 steps in all; now one step each.
TEST(GraphDominators, DeepChainUnderARecorderOpIsLinear) {
  const size_t n = 100'000;
  Trace t = OpsOnly(n, {"magneton::warmup", "aten::relu"});
  for (size_t i = 1; i < n; ++i) {
    t.ops[i].name_id = 1;
    t.ops[i].parent_id = static_cast<int64_t>(i) - 1;
  }
  auto g = BuildDataflowGraph(t);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->op_count(), 0);
  EXPECT_TRUE(g->folded_op_ids.empty());
}

// A dominator tree whose idom links loop (never computed so, but the walks
// over it must end on any arrays).
TEST(GraphDominators, WalksOverAMalformedTreeEnd) {
  DominatorTree tree;
  tree.root = 0;
  tree.idom = {0, 2, 1, 7};
  tree.depth = {0, 5, 6, 1};
  EXPECT_FALSE(tree.Dominates(0, 2));
  EXPECT_FALSE(tree.Dominates(0, 3));  // idom 7: out of range
  const std::vector<int32_t> path = tree.PathFromRoot(1);
  EXPECT_LE(path.size(), tree.idom.size());
  EXPECT_LE(tree.PathFromRoot(3).size(), tree.idom.size());
}

}  // namespace
}  // namespace magneton
