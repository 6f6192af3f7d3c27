// The replay loop, target and comparison without torch or a GPU: a scripted
// clock, a scripted device (asynchronous work that only a synchronise
// completes) and a scripted energy counter that steps and lags like NVML's.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <string>
#include <vector>

#include "fake_clock.h"
#include "replay/replay_compare.h"
#include "replay/replay_loop.h"
#include "replay/replay_target.h"
#include "trace/op_replays.h"
#include "magneton/recorder.h"
#include "test_util.h"

namespace magneton::replay {
namespace {

using energy::FakeClock;

// A device that queues calls and runs them only when synchronised (as a GPU
// does), drawing `power_w` while it runs; its counter reads whole steps of
// `step_uj`, updated only every `update_ns` (NVML: 1 mJ, tens of ms).
struct ScriptedDevice {
  FakeClock* clock;
  int64_t call_ns = 50'000;
  double power_w = 400;  // µJ per µs
  double step_uj = 1000;
  int64_t update_ns = 20'000'000;
  int64_t t0_ns = 0;
  int64_t queued_ns = 0;
  double energy_uj = 0;  // true energy so far
  double visible_uj = 0;  // what the counter says
  int64_t last_update_ns = 0;
  std::vector<std::string> events;

  CallIssuer Issuer(int calls_per_launch = 1) {
    return {"loop", [this, calls_per_launch](int64_t calls) -> StatusOr<int64_t> {
              const int64_t launches = (calls + calls_per_launch - 1) / calls_per_launch;
              queued_ns += launches * calls_per_launch * call_ns;
              events.push_back("issue");
              return launches * calls_per_launch;
            }};
  }
  Status Synchronize() {
    clock->Advance(queued_ns);
    energy_uj += power_w * queued_ns / 1000.0;
    queued_ns = 0;
    events.push_back("sync");
    return Status::Ok();
  }
  StatusOr<double> Read() {
    const int64_t now = clock->MonotonicNowNs();
    if (now - last_update_ns >= update_ns) {
      visible_uj = std::floor(energy_uj / step_uj) * step_uj;
      last_update_ns = now;
    }
    events.push_back("read");
    return visible_uj;
  }
  LoopHooks Hooks(CallIssuer issuer) {
    LoopHooks h;
    h.issuer = std::move(issuer);
    h.synchronize = [this] { return Synchronize(); };
    h.read_energy_uj = [this] { return Read(); };
    h.clock = clock;
    return h;
  }
};

TEST(ReplayLoop, RoundsLastLongEnoughAndTheCounterMovesEnough) {
  FakeClock clock;
  ScriptedDevice gpu{&clock};
  LoopOptions o;
  o.min_round_ns = 2'000'000'000;  // the paper's 2 s
  o.min_energy_uj = MinEnergyDeltaUj("nvml");
  o.rounds = 3;
  auto r = RunReplayLoop(gpu.Hooks(gpu.Issuer()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rounds.size(), 3u);
  for (const RoundResult& round : r->rounds) {
    EXPECT_GE(round.duration_ns, o.min_round_ns);
    EXPECT_GE(round.energy_uj, o.min_energy_uj);
  }
  // Asynchronous calls: each round's time is what the device ran, exactly.
  for (double ns : r->duration_ns_per_call()) EXPECT_DOUBLE_EQ(ns, 50'000);
  // Per call: 400 W · 50 µs = 20 000 µJ, off by at most one counter update
  // (20 ms at 400 W) plus one step over the round's ~2 s.
  const double bound_uj = (400 * 20'000 + 2 * 1000) / (2e9 / 50'000);
  for (double uj : r->energy_uj_per_call()) EXPECT_NEAR(uj, 20'000, bound_uj);
  const Spread spread = MeanAndSpread(r->energy_uj_per_call());
  EXPECT_NEAR(spread.mean, 20'000, bound_uj);
  EXPECT_LE(spread.stddev, bound_uj);
}

TEST(ReplayLoop, TimeAndEnergyAreReadOnlyAfterTheDeviceIsSynchronised) {
  FakeClock clock;
  ScriptedDevice gpu{&clock};
  gpu.update_ns = 0;
  LoopOptions o;
  o.min_round_ns = 100'000'000;
  o.rounds = 2;
  ASSERT_TRUE(RunReplayLoop(gpu.Hooks(gpu.Issuer()), o).ok());
  for (size_t i = 0; i < gpu.events.size(); ++i) {
    if (gpu.events[i] != "read") continue;
    // Back to the last issue: a sync must lie in between.
    bool synced = false;
    for (size_t j = i; j-- > 0 && gpu.events[j] != "issue";) synced = synced || gpu.events[j] == "sync";
    EXPECT_TRUE(synced) << "an energy read at event " << i << " with device work still queued";
  }
  // Time passes on this device only when it is synchronised: a round timed
  // before the sync would have lasted 0 ns.
  EXPECT_EQ(gpu.queued_ns, 0);
}

TEST(ReplayLoop, AStaleCounterExtendsTheRoundUntilItMoves) {
  FakeClock clock;
  ScriptedDevice gpu{&clock};
  gpu.update_ns = 3'000'000'000;  // a counter that updates every 3 s, first 3 s from now
  gpu.last_update_ns = clock.MonotonicNowNs();
  LoopOptions o;
  o.min_round_ns = 200'000'000;
  o.min_energy_uj = 1;
  o.rounds = 1;
  auto r = RunReplayLoop(gpu.Hooks(gpu.Issuer()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The round began just after the first read (a few ms of warm-up later).
  EXPECT_GE(r->rounds[0].duration_ns, 2'900'000'000) << "ended before the counter moved";
  EXPECT_GT(r->rounds[0].energy_uj, 0);
}

TEST(ReplayLoop, AStuckCounterIsAnErrorNotAFigure) {
  FakeClock clock;
  ScriptedDevice gpu{&clock};
  gpu.update_ns = INT64_MAX;  // never updates after the first read
  LoopOptions o;
  o.min_round_ns = 100'000'000;
  o.max_round_ns = 5'000'000'000;
  o.rounds = 1;
  auto r = RunReplayLoop(gpu.Hooks(gpu.Issuer()), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("stale or stuck meter"), std::string::npos) << r.status().message();
}

TEST(ReplayLoop, WithoutAMeterOnlyTimeIsMeasured) {
  FakeClock clock;
  ScriptedDevice cpu{&clock};
  LoopHooks hooks = cpu.Hooks(cpu.Issuer());
  hooks.read_energy_uj = nullptr;
  LoopOptions o;
  o.min_round_ns = 50'000'000;
  o.rounds = 2;
  auto r = RunReplayLoop(hooks, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->energy_uj_per_call().empty());
  EXPECT_EQ(r->duration_ns_per_call().size(), 2u);
}

TEST(ReplayLoop, GraphLaunchesCountEveryCallTheyHold) {
  FakeClock clock;
  ScriptedDevice gpu{&clock};
  gpu.update_ns = 0;
  gpu.step_uj = 0.001;
  LoopOptions o;
  o.min_round_ns = 100'000'000;
  o.rounds = 2;
  auto r = RunReplayLoop(gpu.Hooks(gpu.Issuer(/*calls_per_launch=*/16)), o);
  ASSERT_TRUE(r.ok());
  for (const RoundResult& round : r->rounds) EXPECT_EQ(round.calls % 16, 0);
  for (double ns : r->duration_ns_per_call()) EXPECT_DOUBLE_EQ(ns, 50'000);
  for (double uj : r->energy_uj_per_call()) EXPECT_NEAR(uj, 20'000, 1e-3);
}

TEST(ReplayLoop, SpreadIsTheSampleStandardDeviation) {
  const Spread s = MeanAndSpread({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(MeanAndSpread({7}).stddev, 0);
  EXPECT_TRUE(std::isnan(MeanAndSpread({}).mean));
}

TEST(ReplayLoop, AGraphIsUsedWhereCaptureWorksElseThePlainLoopSaysWhy) {
  CallIssuer plain{"loop", [](int64_t n) -> StatusOr<int64_t> { return n; }};
  auto graph_ok = []() -> StatusOr<CallIssuer> {
    return CallIssuer{"cuda-graph", [](int64_t n) -> StatusOr<int64_t> { return n; }};
  };
  auto graph_fails = []() -> StatusOr<CallIssuer> {
    return InvalidArgument("operation not permitted when stream is capturing");
  };
  EXPECT_EQ(ChooseIssuer(true, graph_ok, plain).issuer.method, "cuda-graph");
  EXPECT_EQ(ChooseIssuer(true, graph_ok, plain).note, "");
  IssuerChoice fallback = ChooseIssuer(true, graph_fails, plain);
  EXPECT_EQ(fallback.issuer.method, "loop");
  EXPECT_NE(fallback.note.find("not permitted when stream is capturing"), std::string::npos);
  EXPECT_EQ(ChooseIssuer(false, graph_ok, plain).issuer.method, "loop");
  EXPECT_EQ(ChooseIssuer(false, graph_ok, plain).note, "");
  EXPECT_NE(ChooseIssuer(true, nullptr, plain).note, "");
}

PlannedOp Planned(std::vector<std::string> devices, std::string args = "") {
  PlannedOp p;
  p.name = "aten::add.Tensor";
  p.args = std::move(args);
  int64_t slot = 0;
  for (std::string& d : devices) p.inputs.push_back({slot++, {4}, {1}, "float32", std::move(d)});
  return p;
}

TEST(ReplayTarget, AnOpOnAGpuTakesTheDevicePath) {
  auto host = SelectReplayTarget(Planned({"cpu", "cpu"}));
  ASSERT_TRUE(host.ok());
  EXPECT_FALSE(host->on_device);
  EXPECT_FALSE(host->want_graph);
  EXPECT_EQ(host->device_domain, "");
  auto gpu = SelectReplayTarget(Planned({"cuda:0", "cuda:0"}));
  ASSERT_TRUE(gpu.ok());
  EXPECT_TRUE(gpu->on_device);
  EXPECT_EQ(gpu->device, "cuda:0");
  EXPECT_EQ(gpu->device_domain, "gpu-0");
  EXPECT_TRUE(gpu->want_graph);
  // A CPU scalar tensor beside a GPU tensor: still a GPU op.
  auto mixed = SelectReplayTarget(Planned({"cpu", "cuda:1"}));
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->device_domain, "gpu-1");
  // No tensor input, a device argument (aten::empty(..., device=cuda)).
  auto made = SelectReplayTarget(Planned({}, R"([[4], {"dtype": "float32"}, null, {"device": "cuda"}, null, null])"));
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(made->device, "cuda:0");
  auto two = SelectReplayTarget(Planned({"cuda:0", "cuda:1"}));
  EXPECT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("two devices"), std::string::npos);
}

TEST(ReplayTarget, RoundsWaitForAHundredCounterSteps) {
  EXPECT_DOUBLE_EQ(MinEnergyDeltaUj("nvml"), 100'000);
  EXPECT_DOUBLE_EQ(MinEnergyDeltaUj("rapl"), 6'100);
  EXPECT_DOUBLE_EQ(MinEnergyDeltaUj("rapl+nvml"), 100'000);
  EXPECT_DOUBLE_EQ(MinEnergyDeltaUj("estimate"), 0);
  EXPECT_TRUE(IsDeviceDomain("gpu-3"));
  EXPECT_FALSE(IsDeviceDomain("cpu-package-0"));
}

// Two ops of one signature, 1 s each, on a GPU drawing 100 W then 300 W.
Trace GpuTrace() {
  Trace t;
  for (int i = 0; i < 2; ++i) {
    OpEvent op;
    op.id = i;
    op.thread_id = 1;
    op.start_ns = 1'000'000'000 + i * 1'000'000'000LL;
    op.end_ns = op.start_ns + 1'000'000'000;
    t.ops.push_back(op);
  }
  double e = 0;
  for (int64_t ms = 1000; ms <= 3000; ms += 10) {
    EnergySample s;
    s.domain = "gpu-0";
    s.t_ns = ms * 1'000'000;
    s.energy_uj = e;
    s.provenance = Provenance::kMeasured;
    s.meter = "nvml";
    t.energy_samples.push_back(s);
    e += (ms < 2000 ? 100.0 : 300.0) * 10'000;  // W · 10 ms in µJ
  }
  return t;
}

TEST(ReplayCompare, TheOnlineFigureIsTheMeanAttributedEnergyPerOccurrence) {
  const Trace t = GpuTrace();
  auto online = OnlineEnergyPerCall(t, {0, 1}, {"gpu-0"});
  ASSERT_TRUE(online.ok()) << online.status().message();
  EXPECT_NEAR(online->uj_per_call, (100e6 + 300e6) / 2, 1e3);
  EXPECT_EQ(online->provenance, Provenance::kMeasured);
  auto first = OnlineEnergyPerCall(t, {0}, {"gpu-0"});
  ASSERT_TRUE(first.ok());
  EXPECT_NEAR(first->uj_per_call, 100e6, 1e3);
  // A domain the recording has no samples of: no figure, and which one.
  auto missing = OnlineEnergyPerCall(t, {0, 1}, {"gpu-1"});
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(std::isnan(missing->uj_per_call));
  EXPECT_EQ(missing->missing, "gpu-1");
  EXPECT_FALSE(OnlineEnergyPerCall(t, {7}, {"gpu-0"}).ok());
}

TEST(OpReplays, DeviceMethodAndOnlineFigureRoundTripAndOlderFilesGainTheColumns) {
  std::string path = testing::TempPath("replays.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  ASSERT_TRUE(Recorder::Stop().ok());
  // An older file: op_replays without the device replay columns.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "DROP TABLE op_replays; CREATE TABLE op_replays(op_id INTEGER NOT NULL, signature TEXT NOT "
                           "NULL, occurrences INTEGER NOT NULL, meter TEXT NOT NULL, provenance TEXT NOT NULL, "
                           "calls_per_round INTEGER NOT NULL, rounds INTEGER NOT NULL, duration_ns_mean REAL, "
                           "duration_ns_stddev REAL, energy_uj_mean REAL, energy_uj_stddev REAL, error TEXT NOT NULL);"
                           "INSERT INTO op_replays VALUES(1, 'old', 1, '', '', 10, 5, 1.0, 0.1, NULL, NULL, '');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto old_rows = ReadOpReplays(path);
  ASSERT_TRUE(old_rows.ok()) << old_rows.status().message();
  ASSERT_EQ(old_rows->size(), 1u);
  EXPECT_EQ(old_rows->at(0).device, "cpu");
  EXPECT_EQ(old_rows->at(0).method, "");
  EXPECT_TRUE(std::isnan(old_rows->at(0).online_energy_uj));

  OpReplay r;
  r.op_id = 3;
  r.signature = "aten::mm(%0, %1) float32[64x64]@cuda:0 float32[64x64]@cuda:0";
  r.occurrences = 2;
  r.meter = "nvml";
  r.provenance = Provenance::kMeasured;
  r.calls_per_round = 4000;
  r.rounds = 5;
  r.duration_ns_mean = 10'000;
  r.energy_uj_mean = 3'000;
  r.device = "cuda:0";
  r.method = "cuda-graph";
  r.online_energy_uj = 2'500;
  ASSERT_TRUE(AppendOpReplays(path, {r}).ok());
  auto rows = ReadOpReplays(path);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(rows->at(1).device, "cuda:0");
  EXPECT_EQ(rows->at(1).method, "cuda-graph");
  EXPECT_DOUBLE_EQ(rows->at(1).online_energy_uj, 2'500);
  EXPECT_EQ(rows->at(0).device, "cpu") << "the older row takes the column's default";
}

}  // namespace
}  // namespace magneton::replay
