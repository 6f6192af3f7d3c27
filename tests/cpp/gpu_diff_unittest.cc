// The GPU path end to end, on fakes for the hardware only: two recordings of
// the same two-layer network written by the real Recorder, each with the
// kernel stream a GPU would have run replayed through the scripted activity
// source (fake_activity_source.h) and ingested by the real record-stage
// ingest, GPU and CPU energy counters scripted from the same schedule; then
// attribution, matching and the diff through the analysis session.
// A runs its matmuls in fp32 (TF32 off: a slower sgemm and a split-K
// reduction); B in TF32 (one faster kernel). The diff must find the linear
// regions costlier on A and name the kernels and their energy.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <random>

#include "fake_activity_source.h"
#include "fingerprint/fingerprint_map.h"
#include "magneton/analysis.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "energy/attribution.h"
#include "record/device_ingest.h"
#include "report/trace_tables.h"
#include "synthetic_trace.h"
#include "test_util.h"

namespace magneton::testing {
namespace {

using nlohmann::json;
constexpr int64_t kUs = 1'000;

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Fingerprint Fp(const std::vector<float>& v, std::vector<int64_t> shape) {
  return testing::FingerprintOf(v, std::move(shape));
}

struct PlannedOp {
  std::string name;
  int64_t start_ns, end_ns;
};

// What one side's GPU runs for each op, in launch order.
struct Launches {
  std::vector<StreamEntry> linear, relu;
};

Launches Fp32() {
  return {{{"", 0, "sgemm_fp32_128x64_nn", "kernel", 0, 7, 5 * kUs, 4'000 * kUs, true},
           {"", 0, "splitK_reduce_fp32", "kernel", 0, 7, 2 * kUs, 500 * kUs, true}},
          {{"", 0, "relu_kernel", "kernel", 0, 7, 5 * kUs, 300 * kUs, true}}};
}
Launches Tf32() {
  return {{{"", 0, "cutlass_tf32_gemm_128x64_nn", "kernel", 0, 7, 5 * kUs, 1'000 * kUs, true}},
          {{"", 0, "relu_kernel", "kernel", 0, 7, 5 * kUs, 300 * kUs, true}}};
}

// Power of the scripted GPU: 60 W idle, 300 W while a kernel runs (copies
// and fills too), 400 W with two at once; the CPU package: 15 W idle, 35 W
// while a host op runs.
double GpuWatts(const std::vector<ScheduledKernel>& ks, int64_t t) {
  int active = 0;
  for (const ScheduledKernel& k : ks) active += t >= k.start_ns && t < k.end_ns;
  return active == 0 ? 60.0 : active == 1 ? 300.0 : 400.0;
}
double CpuWatts(const std::vector<PlannedOp>& ops, int64_t t) {
  for (const PlannedOp& op : ops) {
    if (t >= op.start_ns && t < op.end_ns) return 35.0;
  }
  return 15.0;
}

// Counter samples every `period` over [t0, t1], integrating `watts` on a
// 10 µs grid (what the meter's counter would have read).
template <typename Fn>
void AppendCounter(Recorder* rec, const std::string& domain, const std::string& meter, int64_t t0, int64_t t1,
                   int64_t period, Fn watts) {
  double e_uj = 1e9;
  for (int64_t t = t0; t <= t1; t += period) {
    rec->AppendEnergySample({domain, t, e_uj, std::nan(""), Provenance::kMeasured, meter});
    for (int64_t u = t; u < t + period; u += 10 * kUs) e_uj += watts(u) * 1e-3 * static_cast<double>(10 * kUs);
  }
}

struct Recorded {
  std::string path;
  std::vector<ScheduledKernel> kernels;
};

// x (4x6) -> [linear -> relu] x 2 -> sum -> item. Host ops return at once
// (the GPU runs behind them) except item, which waits for the GPU.
Recorded Record(const std::string& name, const Launches& launches, bool tf32) {
  Recorded out;
  out.path = TempPath(name);
  RunMetadata meta;
  meta.label = name;
  EXPECT_TRUE(Recorder::Start(out.path, meta).ok());
  Recorder* rec = Recorder::Active();
  const int64_t t0 = MonotonicNowNs() + 10'000 * kUs;

  // Plan the host ops, then where the stream runs over them (item ends when
  // the GPU is done).
  std::vector<PlannedOp> plan;
  int64_t t = t0;
  for (int layer = 0; layer < 2; ++layer) {
    plan.push_back({"aten::linear", t, t + 200 * kUs});
    plan.push_back({"aten::relu", t + 250 * kUs, t + 350 * kUs});
    t += 400 * kUs;
  }
  plan.push_back({"aten::sum", t, t + 100 * kUs});
  plan.push_back({"aten::_local_scalar_dense", t + 150 * kUs, 0});
  KernelStream stream;
  stream.clock_offset_ns = 1'700'000'000'000'000'000;
  stream.callback_skew_ns = {600, -300, 900, 100};
  for (int layer = 0; layer < 2; ++layer) {
    for (StreamEntry e : launches.linear) {
      e.op = "aten::linear";
      e.occurrence = layer;
      stream.kernels.push_back(e);
    }
    for (StreamEntry e : launches.relu) {
      e.op = "aten::relu";
      e.occurrence = layer;
      stream.kernels.push_back(e);
    }
  }
  stream.kernels.push_back({"aten::sum", 0, "reduce_kernel", "kernel", 0, 7, 5 * kUs, 100 * kUs, true});
  stream.kernels.push_back(
      {"aten::_local_scalar_dense", 0, "Memcpy DtoH (Device -> Pageable)", "memcpy", 0, 7, 2 * kUs, 10 * kUs, true});
  std::vector<OpSpan> planned;
  for (size_t i = 0; i < plan.size(); ++i) {
    planned.push_back({static_cast<int64_t>(i), plan[i].name, 1, plan[i].start_ns,
                       plan[i].end_ns ? plan[i].end_ns : plan[i].start_ns + 50 * kUs, kNoId, 0});
  }
  // The copy back waits for everything before it on the stream.
  const std::vector<ScheduledKernel> before = Schedule(stream, planned);
  plan.back().end_ns = before.back().end_ns + 20 * kUs;

  // Record: tensors with real fingerprints, as diff_fixture does.
  std::vector<int64_t> shape = {4, 6}, wshape = {6, 6}, bshape = {6}, scalar = {};
  std::vector<int64_t> strides = {6, 1}, wstrides = {6, 1}, bstrides = {1}, none = {};
  auto view = [](uint64_t addr, std::vector<int64_t>& sh, std::vector<int64_t>& st, const char* device) {
    return TensorView{addr, 0, sh.data(), st.data(), static_cast<int32_t>(sh.size()), "float32", device, 0};
  };
  std::vector<std::pair<uint64_t, Fingerprint>> fps;
  uint64_t next = 0x1000000;
  std::vector<float> x = Random(24, 1);
  uint64_t x_addr = next += 0x10000;
  fps.emplace_back(x_addr, Fp(x, shape));
  size_t p = 0;
  auto op = [&](auto&& body) {
    const PlannedOp& o = plan[p++];
    rec->BeginOp(rec->InternString(o.name), kNoId);
    body();
    rec->EndOp("", o.start_ns, o.end_ns);
  };
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<float> w = Random(36, 10 + layer), b = Random(6, 20 + layer);
    const uint64_t w_addr = next += 0x10000, b_addr = next += 0x10000, y_addr = next += 0x10000,
                   z_addr = next += 0x10000;
    fps.emplace_back(w_addr, Fp(w, wshape));
    fps.emplace_back(b_addr, Fp(b, bshape));
    std::vector<float> y(24);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) {
        float s = b[j];
        for (int k = 0; k < 6; ++k) s += x[i * 6 + k] * w[j * 6 + k];
        y[i * 6 + j] = s;
      }
    fps.emplace_back(y_addr, Fp(y, shape));
    op([&] {
      rec->AddInput(0, view(x_addr, shape, strides, "cuda:0"));
      rec->AddInput(1, view(w_addr, wshape, wstrides, "cuda:0"));
      rec->AddInput(2, view(b_addr, bshape, bstrides, "cuda:0"));
      rec->AddOutput(0, view(y_addr, shape, strides, "cuda:0"));
    });
    for (auto& v : y) v = std::max(v, 0.f);
    fps.emplace_back(z_addr, Fp(y, shape));
    op([&] {
      rec->AddInput(0, view(y_addr, shape, strides, "cuda:0"));
      rec->AddOutput(0, view(z_addr, shape, strides, "cuda:0"));
    });
    x = y;
    x_addr = z_addr;
  }
  float total = 0;
  for (float v : x) total += v;
  const uint64_t s_addr = next += 0x10000, i_addr = next += 0x10000;
  fps.emplace_back(s_addr, Fp({total}, scalar));
  fps.emplace_back(i_addr, Fp({total}, scalar));
  op([&] {
    rec->AddInput(0, view(x_addr, shape, strides, "cuda:0"));
    rec->AddOutput(0, view(s_addr, scalar, none, "cuda:0"));
  });
  op([&] {
    rec->AddInput(0, view(s_addr, scalar, none, "cuda:0"));
    rec->AddOutput(0, view(i_addr, scalar, none, "cpu"));
  });
  rec->SetConfig("torch.backends.cuda.matmul.allow_tf32", tf32 ? "True" : "False", "global_flag");

  // The GPU's stream over the ops as recorded, and the meters over both.
  EXPECT_TRUE(rec->Flush().ok());
  auto spans = ReadOpSpans(out.path);
  EXPECT_TRUE(spans.ok());
  out.kernels = Schedule(stream, *spans);
  const int64_t w0 = t0 - 2'000 * kUs, w1 = plan.back().end_ns + 2'000 * kUs;
  AppendCounter(rec, "gpu-0", "nvml", w0, w1, 1'000 * kUs, [&](int64_t u) { return GpuWatts(out.kernels, u); });
  AppendCounter(rec, "cpu-package-0", "rapl", w0, w1, 1'000 * kUs, [&](int64_t u) { return CpuWatts(plan, u); });
  FakeActivitySource source(stream, out.path);
  auto stats = IngestDeviceActivities(*rec, source, DeviceClockBracket{});
  EXPECT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(out.path);
  EXPECT_TRUE(trace.ok());
  FingerprintMap map;
  for (const auto& [addr, fp] : fps) {
    for (const TensorMeta& m : trace->tensors) {
      if (m.storage_addr == addr) map[m.id] = fp;
    }
  }
  EXPECT_TRUE(WriteFingerprints(out.path, map).ok());
  return out;
}

const json* Finding(const json& report, const std::string& kind, const std::string& kernel_a = "") {
  for (const json& f : report["findings"]) {
    if (f["kind"] != kind) continue;
    if (kernel_a.empty()) return &f;
    if (f["kernels"].is_null()) continue;
    for (const json& k : f["kernels"]["a"]) {
      if (k["name"] == kernel_a) return &f;
    }
  }
  return nullptr;
}

double KernelEnergy(const json& f, const char* side, const std::string& name) {
  for (const json& k : f["kernels"][side]) {
    if (k["name"] == name) return k["energy_uj"].get<double>();
  }
  return -1;
}

TEST(GpuDiff, NamesTheKernelsAndTheirEnergy) {
  const Recorded a = Record("gpu_a.mtrace", Fp32(), /*tf32=*/false);
  const Recorded b = Record("gpu_b.mtrace", Tf32(), /*tf32=*/true);
  auto session = AnalysisSession::Open({a.path}, {b.path});
  ASSERT_TRUE(session.ok()) << session.status().message();
  // Device energy for the GPU work, host energy for the host work: both measured, so added.
  EXPECT_EQ((*session)->domain(), "cpu-package-0+gpu-0");
  ASSERT_TRUE((*session)->Diff().ok());
  const json report = json::parse((*session)->JsonReport());
  EXPECT_EQ(report["energy"]["domain"], "cpu-package-0+gpu-0");
  EXPECT_EQ(report["energy"]["basis"], "host+device");
  EXPECT_EQ(report["energy"]["provenance"], "measured");

  const json* linear = Finding(report, "matched", "sgemm_fp32_128x64_nn");
  ASSERT_NE(linear, nullptr) << report.dump(2);
  EXPECT_EQ((*linear)["costlier_side"], "A");
  EXPECT_NE((*linear)["verdict"], "equal") << linear->dump(2);
  // Kernel-level energy on both sides: A's fp32 matmul (4 ms at 300 W each
  // layer) against B's TF32 one (1 ms).
  const double sgemm = KernelEnergy(*linear, "a", "sgemm_fp32_128x64_nn");
  const double tf32 = KernelEnergy(*linear, "b", "cutlass_tf32_gemm_128x64_nn");
  EXPECT_GT(sgemm, 0);
  EXPECT_GT(tf32, 0);
  EXPECT_GT(sgemm, 2.5 * tf32);
  EXPECT_GT(KernelEnergy(*linear, "a", "splitK_reduce_fp32"), 0);
  EXPECT_EQ(KernelEnergy(*linear, "b", "splitK_reduce_fp32"), -1);  // B runs no split-K
  // The sgemm's energy is about its time at 300 W (the 1 ms counter smears
  // the edges; the region's total is exact).
  double sgemm_ns = 0;
  for (const json& k : (*linear)["kernels"]["a"]) {
    if (k["name"] == "sgemm_fp32_128x64_nn") sgemm_ns = k["time_ns"].get<double>();
  }
  EXPECT_EQ(sgemm_ns, 2 * 4'000 * kUs);
  EXPECT_NEAR(sgemm, 300.0 * 1e-3 * sgemm_ns, 0.25 * 300.0 * 1e-3 * sgemm_ns);

  // The diagnosis sees the kernels the same API chose on each side.
  ASSERT_FALSE((*linear)["diagnosis"].is_null());
  const json& kernel = (*linear)["diagnosis"]["kernel"];
  ASSERT_FALSE(kernel.is_null()) << linear->dump(2);
  EXPECT_NE(kernel["nested_a"].dump().find("kernel:sgemm_fp32_128x64_nn"), std::string::npos);
  EXPECT_NE(kernel["nested_b"].dump().find("kernel:cutlass_tf32_gemm_128x64_nn"), std::string::npos);

  // The GPU's idle time inside the job is its own region.
  const json* idle = Finding(report, "device_idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_GT((*idle)["a"]["energy_uj"].get<double>(), 0);

  // The HTML names them too, and draws the power of both domains added.
  const std::string html = (*session)->HtmlReport();
  EXPECT_NE(html.find("<code>sgemm_fp32_128x64_nn</code>"), std::string::npos);
  EXPECT_EQ(html.find("no energy samples of"), std::string::npos);
  EXPECT_NE(html.find("power, cpu-package-0+gpu-0 (measured)"), std::string::npos);

  const std::string text = (*session)->TerminalReport();
  EXPECT_NE(text.find("GPU work in A: sgemm_fp32_128x64_nn ×2"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU work in B: cutlass_tf32_gemm_128x64_nn ×2"), std::string::npos) << text;
}

TEST(GpuDiff, NotebookTablesListEveryActivityWithItsEnergy) {
  const Recorded a = Record("gpu_tables.mtrace", Fp32(), false);
  auto trace = ReadTrace(a.path);
  ASSERT_TRUE(trace.ok());
  auto tables = report::TraceAsTables(*trace, "");
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  const report::Table& t = tables->device_activities;
  auto column = [&](const std::string& name) -> const report::ColumnValues& {
    for (const report::Column& c : t) {
      if (c.name == name) return c.values;
    }
    ADD_FAILURE() << "no column " << name;
    static const report::ColumnValues kNone;
    return kNone;
  };
  const auto& names = std::get<std::vector<std::string>>(column("name"));
  const auto& ops = std::get<std::vector<std::string>>(column("op_name"));
  const auto& energy_uj = std::get<std::vector<double>>(column("energy_uj"));
  const auto& domain = std::get<std::vector<std::string>>(column("domain"));
  ASSERT_EQ(names.size(), a.kernels.size());
  double sum = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "sgemm_fp32_128x64_nn") {
      EXPECT_EQ(ops[i], "aten::linear");
    }
    EXPECT_TRUE(std::isfinite(energy_uj[i]));
    EXPECT_EQ(domain[i], "gpu-0");
    sum += energy_uj[i];
  }
  auto gpu = energy::AttributeEnergy(*trace, "gpu-0");
  ASSERT_TRUE(gpu.ok());
  EXPECT_NEAR(sum, gpu->devices.at(0).kernels_uj, 1e-6 * sum);
  // Without samples of that GPU the activities are listed, their energy unknown.
  std::erase_if(trace->energy_samples, [](const EnergySample& s) { return s.domain == "gpu-0"; });
  auto without = report::TraceAsTables(*trace, "");
  ASSERT_TRUE(without.ok());
  for (const report::Column& c : without->device_activities) {
    if (c.name != "energy_uj") continue;
    for (double v : std::get<std::vector<double>>(c.values)) EXPECT_TRUE(std::isnan(v));
  }
}

TEST(GpuDiff, KernelsOnOneSideOnlyAreNotComparedWithHostTime) {
  const Recorded a = Record("gpu_one_a.mtrace", Fp32(), false);
  const Recorded b = Record("gpu_one_b.mtrace", Tf32(), true);
  ExecSql(b.path, "DELETE FROM device_activities");  // as if B were recorded without device activity
  auto session = AnalysisSession::Open({a.path}, {b.path});
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_EQ((*session)->domain(), "cpu-package-0");  // the GPU would be kernels on A, host time on B
  EXPECT_TRUE((*session)->Diff().ok());
  AnalysisOptions gpu;
  gpu.domain = "gpu-0";
  auto asked = AnalysisSession::Open({a.path}, {b.path}, gpu);
  ASSERT_TRUE(asked.ok()) << asked.status().message();
  const Status st = (*asked)->Diff();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("device activity"), std::string::npos) << st.message();
}

TEST(GpuDiff, TheSameKernelsOnBothSidesAreNoFinding) {
  const Recorded b1 = Record("gpu_b1.mtrace", Tf32(), true);
  const Recorded b2 = Record("gpu_b2.mtrace", Tf32(), true);
  auto session = AnalysisSession::Open({b1.path}, {b2.path});
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE((*session)->Diff().ok());
  const json report = json::parse((*session)->JsonReport());
  for (const json& f : report["findings"]) {
    EXPECT_EQ(f["verdict"], "equal") << f.dump(2);
  }
  // The kernels are still named, equal on both sides.
  const json* linear = Finding(report, "matched", "cutlass_tf32_gemm_128x64_nn");
  ASSERT_NE(linear, nullptr);
  EXPECT_NEAR(KernelEnergy(*linear, "a", "cutlass_tf32_gemm_128x64_nn"),
              KernelEnergy(*linear, "b", "cutlass_tf32_gemm_128x64_nn"), 1e-6 * KernelEnergy(*linear, "a", "cutlass_tf32_gemm_128x64_nn"));
}

}  // namespace
}  // namespace magneton::testing
