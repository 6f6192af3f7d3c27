// torch.profiler / Kineto trace ingestion (gpu/kineto_trace.h), the clock
// mapping (gpu/clock_align.h) and the link of device activity to the ops that
// launched it (gpu/link.h), on a hand-written fixture of the documented
// chrome-trace format: tests/data/kineto/linear_relu.json, one linear (t,
// addmm), one relu (clamp_min), a host-to-device copy and a fill, a kernel on
// a side stream launched with no external id, a collective kernel with no
// correlation, and malformed events.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "gpu/clock_align.h"
#include "gpu/kineto_trace.h"
#include "gpu/link.h"

namespace magneton::gpu {
namespace {

constexpr int64_t kBaseNs = 1'700'000'000'000'000'000;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(MAGNETON_TEST_DATA_DIR) + "/kineto/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ns on the fixture's clock of a ts in µs.
int64_t At(double us) { return kBaseNs + static_cast<int64_t>(us * 1000 + 0.5); }

const RawActivity* Named(const ActivityBatch& b, const std::string& prefix) {
  for (const RawActivity& a : b.activities) {
    if (a.name.rfind(prefix, 0) == 0) return &a;
  }
  return nullptr;
}

TEST(KinetoTrace, ReadsDeviceWorkLaunchesAndHostOps) {
  auto batch = ParseKinetoTrace(Fixture("linear_relu.json"));
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  EXPECT_EQ(batch->source, "kineto");
  // sgemm, clamp_min kernel, side stream kernel, memcpy, memset, nccl.
  ASSERT_EQ(batch->activities.size(), 6u);
  EXPECT_EQ(batch->launches.size(), 6u);   // 11, 12, 15, 13, 14 and the synchronize (16)
  EXPECT_EQ(batch->host_ops.size(), 10u);  // python_function, Trace spans, flows and metadata are skipped
  const std::map<std::string, int64_t> dropped = {{"kernel.no_device", 1}, {"cuda_runtime.no_correlation", 1}};
  EXPECT_EQ(batch->dropped, dropped);
  EXPECT_EQ(batch->device_names.at("cuda:0"), "Scripted GPU");

  const RawActivity* gemm = Named(*batch, "ampere_sgemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kind, ActivityKind::kKernel);
  EXPECT_EQ(gemm->device, 0);
  EXPECT_EQ(gemm->stream, 7);
  EXPECT_EQ(gemm->correlation, 11u);
  EXPECT_EQ(gemm->external_id, 3u);
  // µs with three decimals after baseTimeNanoseconds, to the nanosecond.
  EXPECT_EQ(gemm->start_ns, At(1025.0));
  EXPECT_EQ(gemm->end_ns, At(1075.5));
  const RawActivity* copy = Named(*batch, "Memcpy HtoD");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind, ActivityKind::kMemcpy);
  EXPECT_EQ(copy->end_ns - copy->start_ns, 12'250);
  ASSERT_NE(Named(*batch, "Memset"), nullptr);
  EXPECT_EQ(Named(*batch, "Memset")->kind, ActivityKind::kMemset);
  const RawActivity* nccl = Named(*batch, "ncclDevKernel");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->correlation, 0u);  // kept: it drew power, even if nothing launched it that we know of

  const auto launch = std::find_if(batch->launches.begin(), batch->launches.end(),
                                   [](const Launch& l) { return l.correlation == 11; });
  ASSERT_NE(launch, batch->launches.end());
  EXPECT_EQ(launch->external_id, 3u);
  EXPECT_EQ(launch->thread_id, 4242);
  EXPECT_EQ(launch->start_ns, At(1015.125));
  EXPECT_EQ(batch->timestamp_resolution_ns, 1);  // relative µs keep nanoseconds
}

TEST(KinetoTrace, RefusesWhatIsNotATrace) {
  for (const char* text : {"", "not json", "{\"traceEvents\": [", "{\"schemaVersion\": 1}", "42",
                           "{\"baseTimeNanoseconds\": \"x\", \"traceEvents\": []}"}) {
    auto batch = ParseKinetoTrace(text);
    EXPECT_FALSE(batch.ok()) << text;
    EXPECT_EQ(batch.status().code(), StatusCode::kInvalidArgument) << text;
  }
  // The positive twin: the smallest valid trace, and the bare-array form.
  EXPECT_TRUE(ParseKinetoTrace("{\"traceEvents\": []}").ok());
  EXPECT_TRUE(ParseKinetoTrace("[]").ok());
}

TEST(KinetoTrace, OlderAbsoluteTimestampsSayTheirResolution) {
  // Before baseTimeNanoseconds, Kineto wrote epoch microseconds: a double
  // keeps a quarter microsecond of them.
  auto batch = ParseKinetoTrace(R"([
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1700000000123456.789, "dur": 10.5,
     "args": {"device": 0, "stream": 7, "correlation": 3}}])");
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  ASSERT_EQ(batch->activities.size(), 1u);
  EXPECT_GE(batch->timestamp_resolution_ns, 100);
  EXPECT_LE(batch->timestamp_resolution_ns, 500);
  EXPECT_NEAR(static_cast<double>(batch->activities[0].start_ns), 1700000000123456789.0, 500);
}

TEST(KinetoTrace, MalformedUsedEventsAreCountedNotFatal) {
  auto batch = ParseKinetoTrace(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": -1, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "b", "dur": 1, "args": {"device": 0, "stream": 7}},
    {"ph": "B", "cat": "cpu_op", "name": "c", "ts": 1, "tid": 1},
    {"ph": "X", "cat": "cpu_op", "name": "d", "ts": 1, "dur": 1, "tid": "main"},
    {"ph": "X", "cat": "gpu_memcpy", "name": "e", "ts": 1, "dur": 1, "args": {"device": 0}},
    {"ph": "X", "cat": "kernel", "name": "f", "ts": 1e300, "dur": 1, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "ok", "ts": 1, "dur": 1, "args": {"device": 1, "stream": 9}}]})");
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  ASSERT_EQ(batch->activities.size(), 1u);
  EXPECT_EQ(batch->activities[0].name, "ok");
  const std::map<std::string, int64_t> dropped = {{"kernel.negative_dur", 1}, {"kernel.bad_ts", 2},
                                                  {"cpu_op.not_complete_event", 1}, {"cpu_op.no_tid", 1},
                                                  {"gpu_memcpy.no_stream", 1}};
  EXPECT_EQ(batch->dropped, dropped);
}

// The fixture's host ops as the recorder would have recorded them: the same
// RecordFunctions on CLOCK_MONOTONIC, each stamped by the recorder's own
// callback a little apart from the profiler's.
constexpr int64_t kRealtimeMinusMonotonic = 1'699'990'000'000'000'000;
const int64_t kSkew[] = {1'500, -800, 2'000, 300, -1'200, 900, 0, 1'100, -400, 700};

std::vector<OpSpan> RecordedOps(const ActivityBatch& b, const std::vector<std::string>& skip = {}) {
  std::vector<OpSpan> ops;
  std::vector<int64_t> open;  // stack of indices into ops, for parents
  for (size_t i = 0; i < b.host_ops.size(); ++i) {
    const HostOp& h = b.host_ops[i];
    if (std::find(skip.begin(), skip.end(), h.name) != skip.end()) continue;
    OpSpan op;
    op.op_id = static_cast<int64_t>(ops.size());
    op.name = h.name;
    op.thread_id = h.thread_id;
    op.start_ns = h.start_ns - kRealtimeMinusMonotonic + kSkew[i % 10];
    op.end_ns = h.end_ns - kRealtimeMinusMonotonic + kSkew[i % 10];
    op.correlation_id = 5000 + i;
    while (!open.empty() && ops[static_cast<size_t>(open.back())].end_ns <= op.start_ns) open.pop_back();
    op.parent_id = open.empty() ? kNoId : open.back();
    open.push_back(op.op_id);
    ops.push_back(op);
  }
  return ops;
}

const LinkedActivity& ByName(const LinkResult& r, const std::string& prefix) {
  for (const LinkedActivity& a : r.activities) {
    if (a.name.rfind(prefix, 0) == 0) return a;
  }
  static const LinkedActivity kNone;
  ADD_FAILURE() << "no activity " << prefix;
  return kNone;
}

std::string OpName(const std::vector<OpSpan>& ops, int64_t id) {
  return id == kNoId ? "<none>" : ops[static_cast<size_t>(id)].name;
}

TEST(LinkActivities, ChargesTheInnermostRecordedOpOpenAtTheLaunch) {
  auto batch = ParseKinetoTrace(Fixture("linear_relu.json"));
  ASSERT_TRUE(batch.ok());
  const std::vector<OpSpan> ops = RecordedOps(*batch);
  AlignOptions options;
  // A bracket reading a few µs off, as a real one is.
  options.priors = {{"realtime_bracket", kRealtimeMinusMonotonic + 3'000, 500}};
  auto linked = LinkActivities(*batch, ops, options);
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  const LinkStats& st = linked->stats;
  EXPECT_EQ(st.activities, 6u);
  EXPECT_EQ(OpName(ops, ByName(*linked, "ampere_sgemm").row.op_id), "aten::addmm");  // not linear: the innermost
  EXPECT_EQ(OpName(ops, ByName(*linked, "void at::native::vectorized").row.op_id), "aten::clamp_min");
  EXPECT_EQ(OpName(ops, ByName(*linked, "Memcpy HtoD").row.op_id), "aten::copy_");
  EXPECT_EQ(OpName(ops, ByName(*linked, "Memset").row.op_id), "aten::fill_");
  // Launched with no external id, after clamp_min returned: relu was the
  // innermost op open then.
  EXPECT_EQ(OpName(ops, ByName(*linked, "side_stream_kernel").row.op_id), "aten::relu");
  EXPECT_EQ(ByName(*linked, "ncclDevKernel").row.op_id, kNoId);
  EXPECT_EQ(ByName(*linked, "ncclDevKernel").row.correlation_id, 0u);
  EXPECT_EQ(st.by_host_op, 4u);
  EXPECT_EQ(st.by_launch_time, 1u);
  EXPECT_EQ(st.unlinked, 1u);
  EXPECT_EQ(st.no_launch, 1u);
  // The row carries the launching op's own correlation id (what older readers join on).
  const LinkedActivity& gemm = ByName(*linked, "ampere_sgemm");
  EXPECT_EQ(gemm.row.correlation_id, ops[static_cast<size_t>(gemm.row.op_id)].correlation_id);
  EXPECT_EQ(gemm.row.device, "cuda:0");
  EXPECT_EQ(gemm.row.kind, "kernel");
  EXPECT_EQ(ByName(*linked, "Memcpy HtoD").row.kind, "memcpy");

  // The clock: measured on the ten paired host ops, the bracket's 3 µs gone.
  EXPECT_EQ(st.clock.method, "host_ops");
  EXPECT_EQ(st.clock.prior_used, "realtime_bracket");
  EXPECT_EQ(st.clock.paired, 10u);
  EXPECT_LE(std::llabs(st.clock.offset_ns - kRealtimeMinusMonotonic), 1'100);  // the median skew
  EXPECT_GE(st.clock.error_ns, st.clock.residual_max_ns);  // below 20 pairs: the largest
  EXPECT_LE(st.clock.residual_max_ns, 3'400);  // the widest skew, less the median
  // Device timestamps mapped by the same offset.
  EXPECT_EQ(gemm.row.start_ns, At(1025.0) - st.clock.offset_ns);
  EXPECT_EQ(gemm.row.end_ns - gemm.row.start_ns, 50'500);
}

TEST(LinkActivities, WalksOutToTheRecordedOpWhenTheSourcesInnermostWasNotRecorded) {
  auto batch = ParseKinetoTrace(Fixture("linear_relu.json"));
  ASSERT_TRUE(batch.ok());
  // A recorder that kept only linear, not its nested t and addmm: the gemm
  // launched inside addmm belongs to linear.
  const std::vector<OpSpan> ops = RecordedOps(*batch, {"aten::t", "aten::addmm"});
  auto linked = LinkActivities(*batch, ops, {});
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  EXPECT_EQ(OpName(ops, ByName(*linked, "ampere_sgemm").row.op_id), "aten::linear");
  EXPECT_EQ(linked->stats.by_host_op, 3u);
  EXPECT_EQ(linked->stats.by_launch_time, 2u);
  // No prior given: the offset comes from the host ops alone.
  EXPECT_EQ(linked->stats.clock.method, "host_ops");
  EXPECT_EQ(linked->stats.clock.prior_used, "");
  EXPECT_LE(std::llabs(linked->stats.clock.offset_ns - kRealtimeMinusMonotonic), 1'100);
}

TEST(LinkActivities, PairsOpsWhoseNamesTheRecorderGivesWithTheirOverload) {
  auto batch = ParseKinetoTrace(Fixture("linear_relu.json"));
  ASSERT_TRUE(batch.ok());
  std::vector<OpSpan> ops = RecordedOps(*batch);
  for (OpSpan& op : ops) {
    if (op.name == "aten::clamp_min" || op.name == "aten::fill_") op.name += ".Scalar";
  }
  auto linked = LinkActivities(*batch, ops, {});
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  EXPECT_EQ(OpName(ops, ByName(*linked, "void at::native::vectorized").row.op_id), "aten::clamp_min.Scalar");
  EXPECT_EQ(OpName(ops, ByName(*linked, "Memset").row.op_id), "aten::fill_.Scalar");
  EXPECT_EQ(linked->stats.by_host_op, 4u);
  EXPECT_EQ(linked->stats.clock.paired, 10u);
}

TEST(AlignClocks, BoundsTheMappingByMostPairsNotByAWarmUpOutlier) {
  // 40 ops, each stamped within ±1 µs by the two callbacks, except the
  // first: 40 µs apart, as a callback's first call is.
  ActivityBatch batch;
  std::vector<OpSpan> ops;
  for (int i = 0; i < 40; ++i) {
    const int64_t start = 1'000'000 + i * 100'000;
    const int64_t skew = i == 0 ? 40'000 : (i % 5 - 2) * 500;
    batch.host_ops.push_back({static_cast<uint64_t>(i + 1), "aten::op" + std::to_string(i % 4), 7,
                              start + kRealtimeMinusMonotonic + skew, start + kRealtimeMinusMonotonic + skew + 10'000});
    ops.push_back({i, "aten::op" + std::to_string(i % 4), 7, start, start + 10'000, kNoId, 0});
  }
  auto clock = AlignClocks(batch, ops, {});
  ASSERT_TRUE(clock.ok()) << clock.status().message();
  EXPECT_EQ(clock->paired, 40u);
  EXPECT_LE(std::llabs(clock->offset_ns - kRealtimeMinusMonotonic), 500);
  EXPECT_GE(clock->residual_max_ns, 39'000);
  EXPECT_LE(clock->error_ns, 1'501);  // the 95th percentile of the ±1 µs pairs
  // The twin: below 20 pairs the bound is the worst pair, outlier included.
  batch.host_ops.resize(10);
  ops.resize(10);
  auto few = AlignClocks(batch, ops, {});
  ASSERT_TRUE(few.ok());
  EXPECT_GE(few->error_ns, 39'000);
}

TEST(AlignClocks, BoundsTheEndsOfOpsNotOnlyTheirStarts) {
  // 30 ops whose starts the two callbacks stamp within ±0.5 µs, but whose
  // ends they stamp 10 µs apart: at the end one callback's own work runs
  // between the two readings. A kernel placed after its op's end is off by
  // that much, so the bound has to say so.
  auto make = [](int64_t end_separation_ns) {
    ActivityBatch batch;
    std::vector<OpSpan> ops;
    for (int i = 0; i < 30; ++i) {
      const int64_t start = 2'000'000 + i * 100'000;
      const int64_t skew = (i % 3 - 1) * 500;
      batch.host_ops.push_back({static_cast<uint64_t>(i + 1), "aten::addmm", 7,
                                start + kRealtimeMinusMonotonic + skew,
                                start + kRealtimeMinusMonotonic + 20'000 + end_separation_ns});
      ops.push_back({i, "aten::addmm", 7, start, start + 20'000, kNoId, 0});
    }
    return std::make_pair(batch, ops);
  };
  auto [late_ends, ops] = make(10'000);
  auto clock = AlignClocks(late_ends, ops, {});
  ASSERT_TRUE(clock.ok()) << clock.status().message();
  EXPECT_EQ(clock->paired, 30u);
  // The offset lands between the two clusters, so each stamp is ~5 µs off
  // and every one of them is inside the bound.
  EXPECT_GE(clock->residual_max_ns, 4'500);
  EXPECT_GE(clock->error_ns, 4'500);
  EXPECT_LE(clock->error_ns, 6'001);
  for (const HostOp& h : late_ends.host_ops) {
    const OpSpan& op = ops[h.external_id - 1];
    EXPECT_LE(std::llabs(h.end_ns - clock->offset_ns - op.end_ns), clock->error_ns);
    EXPECT_LE(std::llabs(h.start_ns - clock->offset_ns - op.start_ns), clock->error_ns);
  }
  // The twin: ends stamped as close as starts keep the bound at a µs.
  auto [close_ends, same_ops] = make(0);
  auto tight = AlignClocks(close_ends, same_ops, {});
  ASSERT_TRUE(tight.ok());
  EXPECT_LE(tight->error_ns, 1'001);
}

TEST(LinkActivities, NeedsHostOpsOrAClockReading) {
  auto batch = ParseKinetoTrace(Fixture("linear_relu.json"));
  ASSERT_TRUE(batch.ok());
  const std::vector<OpSpan> ops = RecordedOps(*batch);
  batch->host_ops.clear();
  auto none = LinkActivities(*batch, ops, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  // The twin: a bracket alone places it, with the bracket's own error.
  AlignOptions options;
  options.priors = {{"realtime_bracket", kRealtimeMinusMonotonic, 40'000}};
  auto linked = LinkActivities(*batch, ops, options);
  ASSERT_TRUE(linked.ok()) << linked.status().message();
  EXPECT_EQ(linked->stats.clock.method, "realtime_bracket");
  EXPECT_EQ(linked->stats.clock.error_ns, 40'001);  // the bracket's, plus the timestamp resolution
  // Without external ids every launch is placed by its time: gemm's launch
  // at 1015.125 µs is inside addmm.
  EXPECT_EQ(OpName(ops, ByName(*linked, "ampere_sgemm").row.op_id), "aten::addmm");
  EXPECT_EQ(linked->stats.by_host_op, 0u);
  EXPECT_EQ(linked->stats.by_launch_time, 5u);
}

TEST(LinkActivities, APriorThatPairsNothingLosesToTheHostOps) {
  auto batch = ParseKinetoTrace(Fixture("linear_relu.json"));
  ASSERT_TRUE(batch.ok());
  const std::vector<OpSpan> ops = RecordedOps(*batch);
  AlignOptions options;
  options.priors = {{"monotonic", 0, 0}};  // wrong: the fixture is on the realtime clock
  auto linked = LinkActivities(*batch, ops, options);
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(linked->stats.clock.prior_used, "");
  EXPECT_LE(std::llabs(linked->stats.clock.offset_ns - kRealtimeMinusMonotonic), 1'100);
}

}  // namespace
}  // namespace magneton::gpu
