// CUDA graphs (gpu/graph_link.h): the kernels a graph launch ran, linked to
// the recorder's replay op and to the captured ops whose launches created
// their nodes. Fixture: tests/data/kineto/cuda_graph.json, written by hand in
// the format docs/ARCHITECTURE.md "CUDA graphs" documents from Kineto's
// sources — kernels carry the cudaGraphLaunch's "correlation" and the args
// "graph id" / "graph node id" (libkineto CudaMetadataFields kGraphId /
// kGraphNodeId, pytorch/kineto#1276), launches are "cuda_runtime" events with
// "cbid" and "correlation", and Kineto draws an "ac2g" flow ("ph": "s", "id":
// the correlation) from each launch call it classes as queueing device work.
// A capture of linear + relu (its launches queue no kernel), two replays of
// it (one inside a host op both the profiler and the recorder saw), and the
// negative twins: a replay op whose kernels carry another graph id, a graph
// launch with no replay op, a graph kernel with no launch, an eager kernel.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "gpu/kineto_trace.h"
#include "gpu/link.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "record/device_ingest.h"
#include "test_util.h"

namespace magneton::gpu {
namespace {

constexpr int64_t kBaseNs = 1'700'000'000'000'000'000;
constexpr int64_t kRealtimeMinusMonotonic = 1'699'990'000'000'000'000;
constexpr int64_t kGemmNode = 1099511627877;
constexpr int64_t kReluNode = 1099511627878;

std::string Fixture() {
  std::ifstream in(std::string(MAGNETON_TEST_DATA_DIR) + "/kineto/cuda_graph.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// µs on the fixture's clock -> ns on the op clock.
int64_t OpNs(double us) { return kBaseNs + static_cast<int64_t>(us * 1000) - kRealtimeMinusMonotonic; }

struct Op {
  const char* name;
  double start_us, end_us;
  int64_t parent;
  const char* args;
  int64_t skew_ns;  // the recorder's callback a little apart from the profiler's
};

// What the recorder wrote for the fixture's program, in start order.
const Op kOps[] = {
    {"magneton::cuda_graph_capture", 1000, 1100, kNoId, R"({"graph":1})", 0},  // 0
    {"aten::linear", 1010, 1040, 0, "", 700},                                    // 1
    {"aten::addmm", 1015, 1038, 1, "", -400},                                    // 2
    {"aten::relu", 1050, 1080, 0, "", 900},                                      // 3
    {"aten::clamp_min", 1052, 1078, 3, "", -300},                                // 4
    {"cuda_graph::replay", 2000, 2020, kNoId, R"({"graph":1})", 0},     // 5
    {"CompiledFunction", 2990, 3100, kNoId, "", 500},                            // 6
    {"cuda_graph::replay", 3000, 3020, 6, R"({"graph":1})", 0},         // 7
    {"cuda_graph::replay", 4000, 4020, kNoId, R"({"graph":1})", 0},     // 8
    {"aten::mul", 7000, 7020, kNoId, "", -600},                                  // 9
};

std::vector<OpSpan> RecordedOps(const char* replay_args = R"({"graph":1})", bool with_capture = true) {
  std::vector<OpSpan> ops;
  for (const Op& o : kOps) {
    OpSpan s;
    s.op_id = static_cast<int64_t>(ops.size());
    s.name = o.name;
    s.thread_id = 4242;
    s.start_ns = OpNs(o.start_us) + o.skew_ns;
    s.end_ns = OpNs(o.end_us) + o.skew_ns;
    s.parent_id = o.parent;
    s.correlation_id = 9000 + static_cast<uint64_t>(s.op_id);
    s.recorder_args = o.args;
    if (s.name == kGraphReplayOp) s.recorder_args = replay_args;
    if (!with_capture && s.name == kGraphCaptureOp) s.name = "aten::unrelated_outer";
    ops.push_back(s);
  }
  return ops;
}

AlignOptions Bracket() {
  AlignOptions options;
  options.priors = {{"realtime_bracket", kRealtimeMinusMonotonic + 2'000, 500}};
  return options;
}

std::vector<const LinkedActivity*> Named(const LinkResult& r, const std::string& prefix) {
  std::vector<const LinkedActivity*> out;
  for (const LinkedActivity& a : r.activities) {
    if (a.name.rfind(prefix, 0) == 0) out.push_back(&a);
  }
  return out;
}

TEST(KinetoGraphTrace, ReadsGraphIdsAndLaunchFlows) {
  auto batch = ParseKinetoTrace(Fixture());
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  ASSERT_EQ(batch->activities.size(), 9u);
  int64_t graph_kernels = 0;
  for (const RawActivity& a : batch->activities) {
    if (a.graph_id != 0) ++graph_kernels;
    if (a.name.rfind("sm90_xmma_gemm", 0) == 0) {
      EXPECT_EQ(a.graph_id, 7);
      EXPECT_EQ(a.graph_node_id, kGemmNode);  // node ids past 2^32 kept whole
    }
    if (a.name.find("mul_kernel") != std::string::npos) {
      EXPECT_EQ(a.graph_id, 0);  // eager: no graph
      EXPECT_EQ(a.graph_node_id, 0);
    }
  }
  EXPECT_EQ(graph_kernels, 8);
  EXPECT_EQ(batch->launches.size(), 10u);
  EXPECT_EQ(batch->flow_starts, (std::set<uint64_t>{21, 23, 31, 32, 33, 35}));  // "f" ends are not starts
}

TEST(LinkGraphs, ReplayedKernelsGoToTheReplayOpAndToTheCapturedOps) {
  auto batch = ParseKinetoTrace(Fixture());
  ASSERT_TRUE(batch.ok());
  const std::vector<OpSpan> ops = RecordedOps();
  auto linked = LinkActivities(*batch, ops, Bracket());
  ASSERT_TRUE(linked.ok()) << linked.status().message();

  // Both replays: each kernel on the replay op it ran under — the second
  // launch's external id names CompiledFunction, which holds the replay op.
  const auto gemms = Named(*linked, "sm90_xmma_gemm");
  const auto relus = Named(*linked, "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min");
  ASSERT_EQ(gemms.size(), 2u);
  ASSERT_EQ(relus.size(), 2u);
  EXPECT_EQ(gemms[0]->row.op_id, 5);
  EXPECT_EQ(relus[0]->row.op_id, 5);
  EXPECT_EQ(gemms[1]->row.op_id, 7);
  EXPECT_EQ(relus[1]->row.op_id, 7);
  EXPECT_EQ(gemms[1]->row.correlation_id, ops[7].correlation_id);
  // Each keeps its graph and node, and gets the captured op that made its node.
  for (const LinkedActivity* g : gemms) {
    EXPECT_EQ(g->row.graph_id, 7);
    EXPECT_EQ(g->row.graph_node_id, kGemmNode);
    EXPECT_EQ(g->row.captured_op_id, 2) << "addmm launched the gemm while capturing";
  }
  for (const LinkedActivity* r : relus) {
    EXPECT_EQ(r->row.graph_node_id, kReluNode);
    EXPECT_EQ(r->row.captured_op_id, 4) << "clamp_min launched it while capturing";
  }
  const GraphLinkStats& g = linked->stats.graphs;
  EXPECT_EQ(g.graph_launches, 4u);
  EXPECT_EQ(g.graph_activities, 8u);
  EXPECT_EQ(g.captures, 1u);
  EXPECT_EQ(g.captured_ops, 4u);       // linear, addmm, relu, clamp_min
  EXPECT_EQ(g.captured_launches, 2u);  // not the capture-info query (no flow), nor the capture's own calls
  EXPECT_EQ(g.replays_matched, 2u);
  EXPECT_EQ(g.replays_unmatched, 1u);  // the replay op whose kernels carry graph 9
  EXPECT_EQ(g.linked_to_captured_op, 4u);
}

TEST(LinkGraphs, OtherGraphsAndKernelsOutsideAnyLaunchAreNotLinked) {
  auto batch = ParseKinetoTrace(Fixture());
  ASSERT_TRUE(batch.ok());
  const std::vector<OpSpan> ops = RecordedOps();
  auto linked = LinkActivities(*batch, ops, Bracket());
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  // Graph 9 launched inside a replay op of graph key 1: on that replay op,
  // never on the captured ops of graph 7.
  for (const LinkedActivity* a : Named(*linked, "other_graph_kernel")) {
    EXPECT_EQ(a->row.op_id, 8);
    EXPECT_EQ(a->row.graph_id, 9);
    EXPECT_EQ(a->row.captured_op_id, kNoId);
  }
  // A graph launched outside every recorded op: nothing to charge.
  const auto unrecorded = Named(*linked, "unrecorded_graph_kernel");
  ASSERT_EQ(unrecorded.size(), 1u);
  EXPECT_EQ(unrecorded[0]->row.op_id, kNoId);
  EXPECT_EQ(unrecorded[0]->row.captured_op_id, kNoId);
  // A graph kernel with no launch, though its graph and node ids are graph 7's.
  const auto stray = Named(*linked, "stray_graph_kernel");
  ASSERT_EQ(stray.size(), 1u);
  EXPECT_EQ(stray[0]->row.op_id, kNoId);
  EXPECT_EQ(stray[0]->row.captured_op_id, kNoId);
  EXPECT_EQ(stray[0]->row.graph_node_id, kGemmNode);
  // The positive twin on the same run: an eager kernel, on its op, no graph.
  const auto mul = Named(*linked, "void at::native::vectorized_elementwise_kernel<4, at::native::mul");
  ASSERT_EQ(mul.size(), 1u);
  EXPECT_EQ(mul[0]->row.op_id, 9);
  EXPECT_EQ(mul[0]->row.graph_id, kNoId);
  EXPECT_EQ(mul[0]->row.captured_op_id, kNoId);
  EXPECT_EQ(linked->stats.unlinked, 2u);
  EXPECT_EQ(linked->stats.no_launch, 1u);
  EXPECT_EQ(linked->stats.launch_outside_ops, 1u);
}

TEST(LinkGraphs, NothingIsPairedWhenTheCaptureLaunchesDoNotCountTheNodes) {
  // Without Kineto's flows the capture-info query counts as a launch: three
  // launches for two nodes pair nothing (never a guess), while the replays
  // still charge their replay ops.
  auto batch = ParseKinetoTrace(Fixture());
  ASSERT_TRUE(batch.ok());
  batch->flow_starts.clear();
  auto linked = LinkActivities(*batch, RecordedOps(), Bracket());
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  EXPECT_EQ(linked->stats.graphs.captured_launches, 3u);
  EXPECT_EQ(linked->stats.graphs.replays_matched, 0u);
  EXPECT_EQ(linked->stats.graphs.linked_to_captured_op, 0u);
  for (const LinkedActivity& a : linked->activities) EXPECT_EQ(a.row.captured_op_id, kNoId) << a.name;
  EXPECT_EQ(Named(*linked, "sm90_xmma_gemm")[0]->row.op_id, 5);
}

TEST(LinkGraphs, AReplayPairsOnlyWithARecordedCaptureOfItsGraph) {
  auto batch = ParseKinetoTrace(Fixture());
  ASSERT_TRUE(batch.ok());
  for (auto ops : {RecordedOps(R"({"graph":2})"), RecordedOps(R"({"graph":1})", /*with_capture=*/false),
                   RecordedOps("")}) {
    auto linked = LinkActivities(*batch, ops, Bracket());
    ASSERT_TRUE(linked.ok()) << linked.status().message();
    EXPECT_EQ(linked->stats.graphs.linked_to_captured_op, 0u);
    for (const LinkedActivity& a : linked->activities) EXPECT_EQ(a.row.captured_op_id, kNoId) << a.name;
    EXPECT_EQ(Named(*linked, "sm90_xmma_gemm")[1]->row.op_id, 7);  // the replay op still holds its kernels
  }
}

// Through a real recording: the rows and the graph meta land in the file and
// read back.
TEST(GraphIngest, WritesGraphColumnsAndMeta) {
  const std::string path = testing::TempPath("cuda_graph_ingest.mtrace");
  RunMetadata meta;
  meta.label = "cuda_graph";
  ASSERT_TRUE(Recorder::Start(path, meta).ok());
  Recorder* rec = Recorder::Active();
  const int64_t tid = static_cast<int64_t>(syscall(SYS_gettid));
  // Ops nest by the recorder's thread stack: begin in start order, end each
  // when the next op starts after it.
  std::vector<int64_t> open;
  auto end_until = [&](size_t next) {
    while (!open.empty() && (next == SIZE_MAX || kOps[open.back()].end_us <= kOps[next].start_us)) {
      const Op& o = kOps[open.back()];
      rec->EndOp(o.args, OpNs(o.start_us) + o.skew_ns, OpNs(o.end_us) + o.skew_ns);
      open.pop_back();
    }
  };
  for (size_t i = 0; i < std::size(kOps); ++i) {
    end_until(i);
    rec->BeginOp(rec->InternString(kOps[i].name), kNoId, kNoId, 0);
    open.push_back(static_cast<int64_t>(i));
  }
  end_until(SIZE_MAX);
  // The fixture's thread is this one.
  std::string text = Fixture();
  for (size_t at = 0; (at = text.find("\"tid\": 4242", at)) != std::string::npos;)
    text.replace(at, 11, "\"tid\": " + std::to_string(tid));
  const std::string json_path = testing::TempPath("cuda_graph_fixture.json");
  std::ofstream(json_path) << text;
  KinetoTraceSource source(json_path);
  DeviceClockBracket bracket;
  bracket.known = true;
  bracket.start = {kRealtimeMinusMonotonic + 2'000, 500};
  bracket.stop = {kRealtimeMinusMonotonic + 2'000, 500};
  auto stats = IngestDeviceActivities(*rec, source, bracket);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->device_activities.size(), 9u);
  int captured = 0;
  for (const DeviceActivity& a : trace->device_activities) {
    const std::string& name = trace->str(a.name_id);
    if (name.rfind("sm90_xmma_gemm", 0) == 0) {
      EXPECT_EQ(a.graph_id, 7);
      EXPECT_EQ(a.graph_node_id, kGemmNode);
      ASSERT_NE(a.captured_op_id, kNoId);
      EXPECT_EQ(trace->str(trace->ops[static_cast<size_t>(a.captured_op_id)].name_id), "aten::addmm");
      EXPECT_EQ(trace->str(trace->ops[static_cast<size_t>(a.op_id)].name_id), "cuda_graph::replay");
    }
    if (a.captured_op_id != kNoId) ++captured;
    if (name.find("mul_kernel") != std::string::npos) {
      EXPECT_EQ(a.graph_id, kNoId);
      EXPECT_EQ(a.graph_node_id, kNoId);
    }
  }
  EXPECT_EQ(captured, 4);
  EXPECT_EQ(trace->meta.extra.at("gpu.graph.linked_to_captured_op"), "4");
  EXPECT_EQ(trace->meta.extra.at("gpu.graph.replays_matched"), "2");
  EXPECT_EQ(trace->meta.extra.at("gpu.graph.captured_ops"), "4");
}

}  // namespace
}  // namespace magneton::gpu
