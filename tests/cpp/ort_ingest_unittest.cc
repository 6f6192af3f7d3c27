// ONNX Runtime ingestion (include/ort/ort.h): profile JSON, graph JSON,
// node-name scopes, the clock mapping and graph -> ops/tensors/edges, on
// small hand-written fixtures shaped like ORT 1.32's output.
#include <gtest/gtest.h>

#include <time.h>

#include <fstream>

#include "fingerprint/fingerprint_map.h"
#include "ort/ort.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "test_util.h"

namespace magneton::ort {
namespace {

using magneton::testing::TempPath;

// Two runs of y = MatMul(x, W); z = Relu(y) on one thread, with ORT's
// fence events and a session event that must be skipped.
constexpr const char* kProfile = R"([
  {"cat":"Session","pid":7,"tid":7,"dur":900,"ts":3,"ph":"X","name":"session_initialization","args":{}},
  {"cat":"Session","pid":7,"tid":7,"dur":50,"ts":1000,"ph":"X","name":"model_run","args":{}},
  {"cat":"Node","pid":7,"tid":7,"dur":0,"ts":1009,"ph":"X","name":"/layer/MatMul_fence_before","args":{"op_name":"MatMul"}},
  {"cat":"Node","pid":7,"tid":7,"dur":20,"ts":1010,"ph":"X","name":"/layer/MatMul_kernel_time",
   "args":{"op_name":"MatMul","provider":"CPUExecutionProvider","input_type_shape":[{"float":[2,4]},{"float":[4,3]}],
           "output_type_shape":[{"float":[2,3]}],"thread_scheduling_stats":""}},
  {"cat":"Node","pid":7,"tid":7,"dur":5,"ts":1032,"ph":"X","name":"Relu_fused_kernel_time",
   "args":{"op_name":"Relu","provider":"CPUExecutionProvider","input_type_shape":[{"float":[2,3]}],
           "output_type_shape":[{"float":[2,3]}]}},
  {"cat":"Session","pid":7,"tid":7,"dur":40,"ts":2000,"ph":"X","name":"model_run","args":{}},
  {"cat":"Node","pid":7,"tid":7,"dur":5,"ts":2025,"ph":"X","name":"Relu_fused_kernel_time",
   "args":{"op_name":"Relu","provider":"CPUExecutionProvider"}},
  {"cat":"Node","pid":7,"tid":7,"dur":18,"ts":2005,"ph":"X","name":"/layer/MatMul_kernel_time",
   "args":{"op_name":"MatMul","provider":"CPUExecutionProvider"}}
])";

// The same graph as json_format.MessageToJson writes it (int64 as strings).
constexpr const char* kGraph = R"({
  "name": "main_graph",
  "node": [
    {"input": ["x", "W"], "output": ["y"], "name": "/layer/MatMul", "opType": "MatMul"},
    {"input": ["y"], "output": ["z"], "name": "Relu_fused", "opType": "Relu", "domain": "com.example"}
  ],
  "initializer": [{"dims": ["4", "3"], "dataType": 1, "name": "W", "rawData": "AAAA"}],
  "input": [{"name": "x", "type": {"tensorType": {"elemType": 1,
            "shape": {"dim": [{"dimParam": "batch"}, {"dimValue": "4"}]}}}}],
  "output": [{"name": "z", "type": {"tensorType": {"elemType": 1}}}],
  "valueInfo": [{"name": "y", "type": {"tensorType": {"elemType": 1,
                "shape": {"dim": [{"dimValue": "2"}, {"dimValue": "3"}]}}}}]
})";

Graph TestGraph() {
  auto g = ParseGraphJson(kGraph);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : Graph{};
}

Profile TestProfile() {
  auto p = ParseProfile(kProfile);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : Profile{};
}

TEST(OrtProfile, ParsesNodeAndRunEvents) {
  auto p = ParseProfile(kProfile);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->runs.size(), 2u);
  EXPECT_EQ(p->runs[1].ts_us, 2000);
  ASSERT_EQ(p->nodes.size(), 4u);  // fences and session events skipped
  EXPECT_EQ(p->nodes[0].node_name, "/layer/MatMul");
  EXPECT_EQ(p->nodes[0].op_type, "MatMul");
  EXPECT_EQ(p->nodes[0].provider, "CPUExecutionProvider");
  EXPECT_EQ(p->nodes[0].thread_id, 7);
  ASSERT_EQ(p->nodes[0].inputs.size(), 2u);
  EXPECT_EQ(p->nodes[0].inputs[1].dtype, "float32");
  EXPECT_EQ(p->nodes[0].inputs[1].shape, (std::vector<int64_t>{4, 3}));
  // Sorted by ts: the second run's MatMul (ts 2005) comes before its Relu.
  EXPECT_EQ(p->nodes[2].node_name, "/layer/MatMul");
  EXPECT_EQ(p->nodes[3].node_name, "Relu_fused");
}

TEST(OrtProfile, MalformedInputIsAClearError) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"([{"cat":"Node","name":"a_kernel_time","ts":1)", "not valid JSON"},  // truncated file
      {R"({"traceEvents": []})", "not a JSON array"},
      {R"([3])", "event 0: not a JSON object"},
      {R"([{"cat":"Node","name":"a_kernel_time","dur":1,"tid":1,"args":{"op_name":"Add"}}])",
       "event 0 (a_kernel_time): 'ts' missing"},
      {R"([{"cat":"Session","name":"model_run","ts":1,"dur":-4}])", "negative 'dur'"},
      {R"([{"cat":"Node","name":"a_kernel_time","ts":1,"dur":1,"tid":1,"args":{}}])", "'args.op_name'"},
      {R"([{"cat":"Node","name":"a_kernel_time","ts":1,"dur":1,"tid":1,
            "args":{"op_name":"Add","input_type_shape":[{"float":[1,"x"]}]}}])", "non-integer dim"},
      {R"([{"cat":"Node","name":"a_kernel_time","ts":"1","dur":1,"tid":1,"args":{"op_name":"Add"}}])",
       "'ts' missing or not a number"},
      // Out of int64 as a float (undefined to cast), or beyond 1e13 µs (overflows ns arithmetic): UBSan in the fuzz build.
      {R"([{"cat":"Node","name":"a_kernel_time","ts":1e30,"dur":1,"tid":1,"args":{"op_name":"Add"}}])",
       "'ts' is out of range"},
      {R"([{"cat":"Session","name":"model_run","ts":1,"dur":-1e300}])", "'dur' is out of range"},
      {R"([{"cat":"Node","name":"a_kernel_time","ts":1,"dur":9000000000000000000,"tid":1,"args":{"op_name":"Add"}}])",
       "'dur' is out of range"},
      {R"([{"cat":"Node","name":"a_kernel_time","ts":-10000000000001,"dur":1,"tid":1,"args":{"op_name":"Add"}}])",
       "'ts' is out of range"},
  };
  for (const Case& c : cases) {
    auto p = ParseProfile(c.json);
    ASSERT_FALSE(p.ok()) << c.json;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(c.message), std::string::npos) << p.status().message();
  }
  // The positive twin: a time at the limit, a fractional duration and a hashed 64-bit thread id are read.
  auto edge = ParseProfile(R"([{"cat":"Node","name":"a_kernel_time","ts":10000000000000,"dur":2.5,
                                 "tid":18446744073709551615,"args":{"op_name":"Add"}}])");
  ASSERT_TRUE(edge.ok()) << edge.status().message();
  EXPECT_EQ(edge->nodes[0].ts_us, 10'000'000'000'000);
  EXPECT_EQ(edge->nodes[0].dur_us, 2);
  EXPECT_EQ(edge->nodes[0].thread_id, -1);
  auto missing = ReadProfile(TempPath("absent.json"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(OrtGraph, ParsesProtobufJson) {
  auto g = ParseGraphJson(kGraph);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->name, "main_graph");
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[1].domain, "com.example");
  EXPECT_EQ(g->nodes[0].inputs, (std::vector<std::string>{"x", "W"}));
  ASSERT_EQ(g->initializers.size(), 1u);
  EXPECT_EQ(g->initializers[0].dtype, "float32");
  EXPECT_EQ(g->initializers[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(g->inputs[0].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(IntermediateNames(*g), (std::vector<std::string>{"y", "z"}));

  EXPECT_FALSE(ParseGraphJson(R"({"node": [{"name": "n", "input": ["a"]}]})").ok());       // no opType
  EXPECT_FALSE(ParseGraphJson(R"({"node": [{"opType": "Add", "input": [1]}]})").ok());     // bad input
  EXPECT_FALSE(ParseGraphJson(R"({"initializer": [{"name": "w", "dims": ["x"]}]})").ok());  // bad dims
  EXPECT_FALSE(ParseGraphJson("[]").ok());
}

TEST(OrtGraph, ScopesAndOpNamesFromExporterNames) {
  using V = std::vector<std::string>;
  EXPECT_EQ(ScopeFromNodeName("/m/transformer/h.0/attn/c_attn/Gemm"), (V{"m", "transformer", "h.0", "attn", "c_attn"}));
  EXPECT_EQ(ScopeFromNodeName("/m/transformer/h.0/attn/MatMul/MatMulScaleFusion/"), (V{"m", "transformer", "h.0", "attn"}));
  EXPECT_EQ(ScopeFromNodeName("/m/transformer/h.0/attn/Reshape_3_new_reshape"), (V{"m", "transformer", "h.0", "attn"}));
  EXPECT_EQ(ScopeFromNodeName("GPT2Gelu"), V{});
  // ORT 1.32's MatMul+Add and activation fusions: "<node>/MatMulAddFusion", "fused <node>".
  EXPECT_EQ(ScopeFromNodeName("/m/h.0/mlp/MatMul/MatMulAddFusion"), (V{"m", "h.0", "mlp"}));
  EXPECT_EQ(ScopeFromNodeName("fused /m/h.0/mlp/MatMul/MatMulAddFusion"), (V{"m", "h.0", "mlp"}));
  EXPECT_EQ(ScopeFromNodeName("fused /m/h.0/mlp/c_fc/Gemm"), (V{"m", "h.0", "mlp", "c_fc"}));
  EXPECT_EQ(ScopeFromNodeName("fused MatMul_0/MatMulAddFusion"), V{});  // an unnamed node, named by the recorder
  EXPECT_EQ(ScopeFromNodeName("/MatMulAddFusion"), V{});
  EXPECT_EQ(ScopeFromNodeName("If_4/then_branch/Neg_0"), (V{"If_4", "then_branch"}));
  Graph g;
  g.nodes = {{"/t/h.0/mlp/c_fc/Gemm", "Gemm", "", {"x"}, {"a"}},
             {"GPT2Gelu", "FastGelu", "com.microsoft", {"a"}, {"b"}},
             {"/t/h.0/mlp/c_proj/Gemm", "Gemm", "", {"b"}, {"c"}},
             {"Orphan", "Relu", "", {"x"}, {"d"}}};
  auto scopes = NodeScopes(g);
  EXPECT_EQ(scopes[1], (V{"t", "h.0", "mlp"}));  // between c_fc and c_proj
  EXPECT_EQ(scopes[3], V{});                     // no named neighbour
  EXPECT_EQ(OpName("", "Gemm"), "onnx::Gemm");
  EXPECT_EQ(OpName("com.microsoft", "FastGelu"), "com.microsoft::FastGelu");
  EXPECT_EQ(OrtTypeName("float"), "float32");
  EXPECT_EQ(OnnxElemTypeName(7), "int64");
}

int64_t Now(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TEST(OrtClock, OffsetIsRealtimeMinusMonotonic) {
  ClockOffset c = MeasureClockOffset();
  int64_t direct = Now(CLOCK_REALTIME) - Now(CLOCK_MONOTONIC);
  EXPECT_GT(c.uncertainty_ns, 0);
  EXPECT_LT(c.uncertainty_ns, 1'000'000);  // a few clock reads
  EXPECT_LT(std::abs(c.realtime_minus_monotonic_ns - direct), 1'000'000);
}

// A session clock whose profiling started at realtime 5e9 ns, with monotonic
// = realtime - 1e9 exactly, and hook brackets around both runs.
SessionClock FixedClock(size_t runs) {
  SessionClock c;
  c.profiling_start_realtime_ns = 5'000'000'000;
  c.created = {1'000'000'000, 100};
  const int64_t starts_us[] = {1000, 2000};
  for (size_t k = 0; k < runs; ++k) {
    RunBracket b;
    b.begin = b.end = {1'000'000'000, 50};
    b.begin_monotonic_ns = 4'000'000'000 + starts_us[k] * 1000 - 2000;
    b.end_monotonic_ns = 4'000'000'000 + starts_us[k] * 1000 + 60'000;
    c.runs.push_back(b);
  }
  return c;
}

std::string Fp(float scale) {
  std::vector<float> v(6);
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i + 1);
  TensorBuffer b{v.data(), DType::kFloat32, {2, 3}, {}};
  auto fp = Recorder::EncodeValueFingerprint(b);
  EXPECT_TRUE(fp.ok());
  return *fp;
}

int64_t Link(const Trace& t, int64_t op, TensorRole role, int slot) {
  for (const OpTensor& l : t.op_tensors)
    if (l.op_id == op && l.role == role && l.slot == slot) return l.tensor_id;
  return kNoId;
}

TEST(OrtIngest, GraphBecomesOpsTensorsAndEdgesOnTheMonotonicClock) {
  std::string path = TempPath("ort.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  auto profile = ParseProfile(kProfile);
  auto graph = ParseGraphJson(kGraph);
  ASSERT_TRUE(profile.ok() && graph.ok());
  RunValues values{{{0, "y"}, Fp(1)}, {{1, "y"}, Fp(2)}, {{0, "x"}, Fp(3)}};
  auto stats = IngestSession(*graph, *profile, FixedClock(2), values, Recorder::Active());
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_TRUE(Recorder::Stop().ok());
  EXPECT_EQ(stats->ops, 4);
  EXPECT_EQ(stats->runs, 2);
  EXPECT_EQ(stats->fingerprints, 3);
  EXPECT_EQ(stats->clock_method, "per_run");
  EXPECT_EQ(stats->runs_inside_bracket, 2);
  EXPECT_EQ(stats->runs_outside_bracket, 0);
  EXPECT_EQ(stats->clock_error_ns, 50 + 0 + 1000);  // read bracket + drift/2 (none here) + µs truncation

  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->ops.size(), 4u);
  // Ops in start order; ts 1010 µs after a realtime start of 5 s, minus the 1 s offset.
  EXPECT_EQ(t->str(t->ops[0].name_id), "onnx::MatMul");
  EXPECT_EQ(t->str(t->ops[1].name_id), "com.example::Relu");
  EXPECT_EQ(t->ops[0].start_ns, 4'000'000'000 + 1'010'000);
  EXPECT_EQ(t->ops[0].end_ns, t->ops[0].start_ns + 20'000);
  EXPECT_EQ(t->ops[0].thread_id, 7);
  EXPECT_EQ(t->ops[0].parent_id, kNoId);
  EXPECT_EQ(t->ScopePath(t->ops[0].scope_id), "main_graph/layer");
  EXPECT_EQ(t->ScopePath(t->ops[1].scope_id), "main_graph/layer");  // ORT-named: its neighbour's scope
  EXPECT_EQ(t->ops[0].args, R"({"node":"/layer/MatMul","ep":"CPUExecutionProvider"})");
  // Dataflow: Relu reads what MatMul wrote; the weight is one tensor across
  // runs, activations are new per run.
  for (int run = 0; run < 2; ++run) {
    int64_t mm = t->ops[2 * run].id, relu = t->ops[2 * run + 1].id;
    int64_t y = Link(*t, mm, TensorRole::kOutput, 0);
    EXPECT_EQ(Link(*t, relu, TensorRole::kInput, 0), y);
    EXPECT_EQ(t->tensors[y].producer_op_id, mm);
    // Run 0 from the profile's shapes, run 1 (no shapes) from the graph's value_info.
    EXPECT_EQ(t->tensors[y].shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t->tensors[y].dtype, "float32");
  }
  int64_t w0 = Link(*t, t->ops[0].id, TensorRole::kInput, 1), w1 = Link(*t, t->ops[2].id, TensorRole::kInput, 1);
  EXPECT_EQ(w0, w1);
  EXPECT_EQ(t->tensors[w0].producer_op_id, kNoId);
  EXPECT_EQ(t->tensors[w0].shape, (std::vector<int64_t>{4, 3}));
  int64_t x0 = Link(*t, t->ops[0].id, TensorRole::kInput, 0), x1 = Link(*t, t->ops[2].id, TensorRole::kInput, 0);
  EXPECT_NE(x0, x1);
  EXPECT_EQ(t->tensors[x0].shape, (std::vector<int64_t>{2, 4}));  // as the profile saw it
  EXPECT_EQ(t->tensors[x1].shape, (std::vector<int64_t>{-1, 4}));  // as the graph declares it
  // Fingerprints landed on the right run's tensors.
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(fps.ok()) << fps.status().message();
  int64_t y0 = Link(*t, t->ops[0].id, TensorRole::kOutput, 0), y1 = Link(*t, t->ops[2].id, TensorRole::kOutput, 0);
  ASSERT_TRUE(fps->count(y0) && fps->count(y1) && fps->count(x0));
  EXPECT_NEAR(fps->at(y1).invariant.mean, 2 * fps->at(y0).invariant.mean, 1e-9);
  EXPECT_EQ(fps->count(w0), 0u);
}

TEST(OrtIngest, FallsBackToTheSessionOffsetWhenRunsCannotBePaired) {
  std::string path = TempPath("fallback.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  auto stats = IngestSession(TestGraph(), TestProfile(), FixedClock(1), {}, Recorder::Active());
  ASSERT_TRUE(Recorder::Stop().ok());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->clock_method, "session");
  EXPECT_EQ(stats->clock_error_ns, 100 + 1000);
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ops[0].start_ns, 4'000'000'000 + 1'010'000);
}

// Each run's state (its RunOptions) is stamped on its ops when runs pair
// with the profile's; unpaired runs' ops take the thread's (the session's).
TEST(OrtIngest, EachRunsOpsCarryThatRunsState) {
  std::string path = TempPath("run_states.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  const int64_t session = Recorder::Active()->InternRuntimeState({{"ort.run.terminate", "False"}});
  const int64_t second =
      Recorder::Active()->InternRuntimeState({{"ort.run.terminate", "False"}, {"ort.run.config.k", "v"}});
  Recorder::Active()->SetThreadStateId(session);
  SessionClock paired = FixedClock(2);
  paired.runs[1].state_id = second;  // run 0 keeps kNoId: the session's
  auto stats = IngestSession(TestGraph(), TestProfile(), paired, {}, Recorder::Active());
  SessionClock unpaired = FixedClock(1);
  unpaired.runs[0].state_id = second;
  auto fallback = IngestSession(TestGraph(), TestProfile(), unpaired, {}, Recorder::Active());
  ASSERT_TRUE(Recorder::Stop().ok());
  ASSERT_TRUE(stats.ok() && fallback.ok());
  EXPECT_EQ(stats->clock_method, "per_run");
  EXPECT_EQ(fallback->clock_method, "session");
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->ops.size(), 8u);
  EXPECT_EQ(t->ops[0].state_id, session);
  EXPECT_EQ(t->ops[1].state_id, session);
  EXPECT_EQ(t->ops[2].state_id, second);
  EXPECT_EQ(t->ops[3].state_id, second);
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(t->ops[i].state_id, session) << i;
  ASSERT_EQ(t->runtime_states.size(), 2u);
  EXPECT_EQ(t->runtime_states[second].values.at("ort.run.config.k"), "v");
}

TEST(OrtIngest, UnknownNodesAreKeptWithoutEdges) {
  std::string path = TempPath("unknown.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  auto profile = ParseProfile(
      R"([{"cat":"Session","name":"model_run","ts":0,"dur":10,"tid":1},
          {"cat":"Node","name":"NotInGraph_kernel_time","ts":1,"dur":2,"tid":1,"args":{"op_name":"Add"}}])");
  ASSERT_TRUE(profile.ok());
  auto stats = IngestSession(TestGraph(), *profile, FixedClock(0), {}, Recorder::Active());
  ASSERT_TRUE(Recorder::Stop().ok());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->unknown_nodes, 1);
  EXPECT_EQ(stats->ops_without_tensors, 1);
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->ops.size(), 1u);
  EXPECT_EQ(t->str(t->ops[0].name_id), "onnx::Add");
  EXPECT_TRUE(t->op_tensors.empty());
}

// Two nodes share a name (a graph the recorder did not rename): an event of
// that name could be either, so it links to neither rather than inventing
// dataflow from the first; the node with a name of its own still links.
TEST(OrtIngest, NodesSharingANameAreAmbiguousNotGuessed) {
  std::string path = TempPath("ambiguous.mtrace");
  auto graph = ParseGraphJson(R"({"name": "g", "node": [
      {"input": ["x"], "output": ["y"], "name": "dup", "opType": "Relu"},
      {"input": ["y"], "output": ["z"], "name": "dup", "opType": "Relu"},
      {"input": ["z"], "output": ["w"], "name": "own", "opType": "Neg"}]})");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto profile = ParseProfile(
      R"([{"cat":"Session","name":"model_run","ts":0,"dur":10,"tid":1},
          {"cat":"Node","name":"dup_kernel_time","ts":1,"dur":1,"tid":1,"args":{"op_name":"Relu"}},
          {"cat":"Node","name":"dup_kernel_time","ts":3,"dur":1,"tid":1,"args":{"op_name":"Relu"}},
          {"cat":"Node","name":"own_kernel_time","ts":5,"dur":1,"tid":1,"args":{"op_name":"Neg"}}])");
  ASSERT_TRUE(profile.ok());
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  auto stats = IngestSession(*graph, *profile, FixedClock(0), {}, Recorder::Active());
  ASSERT_TRUE(Recorder::Stop().ok());
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->ambiguous_nodes, 2);
  EXPECT_EQ(stats->unknown_nodes, 0);
  EXPECT_EQ(stats->ops_without_tensors, 2);
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->ops.size(), 3u);
  EXPECT_TRUE(t->LinksOf(t->ops[0].id).empty());
  EXPECT_TRUE(t->LinksOf(t->ops[1].id).empty());
  EXPECT_EQ(t->LinksOf(t->ops[2].id).size(), 2u);
}

TEST(OrtIngest, MalformedProfileLosesNothingRecordedBefore) {
  std::string path = TempPath("kept.mtrace");
  std::string bad = TempPath("bad_profile.json");
  std::ofstream(bad) << R"([{"cat":"Node","name":"/a/Add_kernel_time","ts":1,)";  // killed mid-write
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  rec->BeginOp(rec->InternString("aten::add"), kNoId);
  rec->EndOp("");
  auto profile = ReadProfile(bad);
  ASSERT_TRUE(Recorder::Stop().ok());
  ASSERT_FALSE(profile.ok());
  EXPECT_NE(profile.status().message().find(bad), std::string::npos);  // says which file
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ops.size(), 1u);
  std::ifstream still(bad);
  EXPECT_TRUE(still.good());  // the profile is left for the user to inspect
}

TEST(OrtIngest, NeedsAnActiveRecording) {
  auto stats = IngestSession(TestGraph(), TestProfile(), FixedClock(2), {}, nullptr);
  EXPECT_EQ(stats.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace magneton::ort
