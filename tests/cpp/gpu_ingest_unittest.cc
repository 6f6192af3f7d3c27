// Device activity into a recording (record/device_ingest.h): a scripted
// source replays a kernel stream over ops the real Recorder wrote; the rows
// land in device_activities on CLOCK_MONOTONIC, linked to their ops, with
// the gpu.* meta; a source that fails leaves the recording intact and says
// why.
#include <gtest/gtest.h>

#include "fake_activity_source.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "record/device_ingest.h"
#include "test_util.h"

namespace magneton::testing {
namespace {

constexpr int64_t kUs = 1'000;

// linear [t0, t0+300 µs] holding addmm [+150, +290]; relu [+400, +450].
std::string RecordOps(const std::string& name, int64_t* t0_out) {
  const std::string path = TempPath(name);
  RunMetadata meta;
  meta.label = name;
  EXPECT_TRUE(Recorder::Start(path, meta).ok());
  Recorder* rec = Recorder::Active();
  const int64_t t0 = MonotonicNowNs();
  *t0_out = t0;
  rec->BeginOp(rec->InternString("aten::linear"), kNoId, kNoId, 0);
  rec->BeginOp(rec->InternString("aten::addmm"), kNoId, kNoId, 0);
  rec->EndOp("", t0 + 150 * kUs, t0 + 290 * kUs);
  rec->EndOp("", t0, t0 + 300 * kUs);
  rec->BeginOp(rec->InternString("aten::relu"), kNoId, kNoId, 0);
  rec->EndOp("", t0 + 400 * kUs, t0 + 450 * kUs);
  return path;
}

KernelStream Stream() {
  KernelStream s;
  s.clock_offset_ns = 1'700'000'000'000'000'000 - 12'345;  // a realtime-like source clock
  s.callback_skew_ns = {700, -400, 1'200};
  s.kernels = {
      {"aten::addmm", 0, "sgemm_128x64", "kernel", 0, 7, 5 * kUs, 200 * kUs, true},
      // Launched by linear itself, outside addmm, with no external id: placed by its time.
      {"aten::linear", 0, "bias_broadcast", "kernel", 0, 13, 2 * kUs, 30 * kUs, false},
      {"aten::relu", 0, "relu_kernel", "kernel", 0, 7, 5 * kUs, 20 * kUs, true},
      {"aten::relu", 0, "Memset (Device)", "memset", 0, 7, 1 * kUs, 2 * kUs, true},
  };
  return s;
}

std::string Meta(const Trace& t, const std::string& key) {
  auto it = t.meta.extra.find(key);
  return it == t.meta.extra.end() ? "<absent>" : it->second;
}

TEST(DeviceIngest, WritesLinkedActivitiesOnTheOpClock) {
  int64_t t0 = 0;
  const std::string path = RecordOps("ingest.mtrace", &t0);
  ASSERT_TRUE(Recorder::Active()->Flush().ok());
  auto spans = ReadOpSpans(path);
  ASSERT_TRUE(spans.ok());
  const std::vector<ScheduledKernel> expected = Schedule(Stream(), *spans);
  FakeActivitySource source(Stream(), path);
  auto stats = IngestDeviceActivities(*Recorder::Active(), source, DeviceClockBracket{});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->device_activities.size(), 4u);
  const int64_t error_ns = std::stoll(Meta(*trace, "gpu.clock_error_ns"));
  EXPECT_GT(error_ns, 0);
  EXPECT_LE(error_ns, 2'000);  // the callbacks' skew spread, nothing more
  for (const ScheduledKernel& k : expected) {
    const DeviceActivity* row = nullptr;
    for (const DeviceActivity& a : trace->device_activities) {
      if (trace->str(a.name_id) == k.entry.name) row = &a;
    }
    ASSERT_NE(row, nullptr) << k.entry.name;
    EXPECT_EQ(row->op_id, k.op_id) << k.entry.name;
    EXPECT_EQ(row->device, "cuda:0");
    EXPECT_EQ(row->stream, k.entry.stream);
    EXPECT_EQ(row->kind, k.entry.kind);
    // On CLOCK_MONOTONIC, within the mapping's stated error.
    EXPECT_LE(std::llabs(row->start_ns - k.start_ns), error_ns) << k.entry.name;
    EXPECT_EQ(row->end_ns - row->start_ns, k.entry.duration_ns);
  }
  EXPECT_EQ(trace->str(trace->ops[static_cast<size_t>(expected[1].op_id)].name_id), "aten::linear");
  EXPECT_EQ(Meta(*trace, "gpu.source"), "replay");
  EXPECT_EQ(Meta(*trace, "gpu.activities"), "4");
  EXPECT_EQ(Meta(*trace, "gpu.linked_by_host_op"), "3");
  EXPECT_EQ(Meta(*trace, "gpu.linked_by_launch_time"), "1");
  EXPECT_EQ(Meta(*trace, "gpu.unlinked"), "0");
  EXPECT_EQ(Meta(*trace, "gpu.clock_method"), "host_ops");
  EXPECT_EQ(Meta(*trace, "gpu.clock_paired"), "3");
  EXPECT_EQ(Meta(*trace, "gpu.dropped"), "0");
  EXPECT_EQ(Meta(*trace, "gpu.error"), "<absent>");
}

class FailingSource final : public gpu::ActivitySource {
 public:
  std::string_view name() const override { return "kineto"; }
  StatusOr<gpu::ActivityBatch> Collect() override { return InvalidArgument("Kineto trace is not valid JSON"); }
};

TEST(DeviceIngest, AFailingSourceLeavesTheRecordingAndSaysWhy) {
  int64_t t0 = 0;
  const std::string path = RecordOps("failing.mtrace", &t0);
  FailingSource source;
  auto stats = IngestDeviceActivities(*Recorder::Active(), source, DeviceClockBracket{});
  EXPECT_FALSE(stats.ok());
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->ops.size(), 3u);
  EXPECT_TRUE(trace->device_activities.empty());
  EXPECT_EQ(Meta(*trace, "gpu.error"), "kineto: Kineto trace is not valid JSON");
}

TEST(DeviceIngest, OlderTracesWithoutTheNewColumnsStillRead) {
  int64_t t0 = 0;
  const std::string path = RecordOps("older.mtrace", &t0);
  FakeActivitySource source(Stream(), path);
  ASSERT_TRUE(IngestDeviceActivities(*Recorder::Active(), source, DeviceClockBracket{}).ok());
  ASSERT_TRUE(Recorder::Stop().ok());
  ExecSql(path, "ALTER TABLE device_activities DROP COLUMN op_id; ALTER TABLE device_activities DROP COLUMN kind;");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->device_activities.size(), 4u);
  for (const DeviceActivity& a : trace->device_activities) {
    EXPECT_EQ(a.op_id, kNoId);
    EXPECT_EQ(a.kind, "kernel");
  }
}

TEST(DeviceIngest, PriorsComeFromTheBracket) {
  DeviceClockBracket b;
  EXPECT_EQ(PriorsFrom(b).size(), 1u);  // the monotonic clock only
  b.known = true;
  b.start = {1'000'000, 50};
  b.stop = {1'000'400, 80};  // drifted 400 ns
  const auto priors = PriorsFrom(b);
  ASSERT_EQ(priors.size(), 2u);
  EXPECT_EQ(priors[0].name, "realtime_bracket");
  EXPECT_EQ(priors[0].offset_ns, 1'000'200);
  EXPECT_EQ(priors[0].uncertainty_ns, 80 + 200);
  EXPECT_EQ(priors[1].name, "monotonic");
}

}  // namespace
}  // namespace magneton::testing
