// Per-kernel GPU energy (energy/device_energy.h) and device attribution
// through AttributeEnergy: exact values on a hand-computed case, the even
// split of overlapping kernels, device idle inside and outside the job, and
// conservation (Σ kernels + idle = the window's energy) on random streams.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "energy/attribution.h"
#include "energy/device_energy.h"

namespace magneton::energy {
namespace {

constexpr int64_t kMs = 1'000'000;

OpEvent Op(int64_t id, int64_t start, int64_t end, int64_t parent_id = kNoId, int64_t name_id = 0) {
  OpEvent op;
  op.id = id;
  op.name_id = name_id;
  op.parent_id = parent_id;
  op.thread_id = 1;
  op.start_ns = start;
  op.end_ns = end;
  return op;
}

DeviceActivity Kernel(int64_t start, int64_t end, int64_t op_id, const std::string& device = "cuda:0",
                      int64_t stream = 7) {
  DeviceActivity a;
  a.device = device;
  a.stream = stream;
  a.name_id = 1;
  a.start_ns = start;
  a.end_ns = end;
  a.op_id = op_id;
  return a;
}

// A GPU counter read every `step` ns over [t0, t1], at `watts(t)`.
template <typename Fn>
std::vector<EnergySample> GpuSamples(int64_t t0, int64_t t1, int64_t step, Fn watts,
                                     const std::string& domain = "gpu-0",
                                     Provenance provenance = Provenance::kMeasured) {
  std::vector<EnergySample> out;
  double e = 1e9;  // NVML's counter counts from driver load
  for (int64_t t = t0; t <= t1; t += step) {
    out.push_back({domain, t, e, std::nan(""), provenance, "nvml"});
    e += watts(t) * 1e-3 * static_cast<double>(step);  // W · ns = 1e-3 µJ
  }
  return out;
}

// 100 W throughout; K1 [1,3) ms and K2 [2,4) ms overlap on [2,3); K3 [6,7).
//   op 0 [0.5, 1.5] ms launched K1, op 1 [1.5, 2.5] launched K2 (nested in
//   none), op 2 [5, 5.5] launched K3 and holds op 3 [5.1, 5.2], which launched
//   nothing; the window is [0, 10] ms.
Trace SmallGpuTrace() {
  Trace t;
  t.strings = {"op", "kernel"};
  t.ops = {Op(0, kMs / 2, 3 * kMs / 2), Op(1, 3 * kMs / 2, 5 * kMs / 2), Op(2, 5 * kMs, 11 * kMs / 2),
           Op(3, 51 * kMs / 10, 52 * kMs / 10, 2)};
  t.device_activities = {Kernel(1 * kMs, 3 * kMs, 0), Kernel(2 * kMs, 4 * kMs, 1, "cuda:0", 13),
                         Kernel(6 * kMs, 7 * kMs, 2)};
  return t;
}

TEST(DeviceEnergy, SplitsOverlapsEvenlyAndCountsIdle) {
  const Trace t = SmallGpuTrace();
  auto d = AttributeDeviceEnergy(t, GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 100.0; }), "gpu-0",
                                 kMs / 2, 8 * kMs);
  ASSERT_TRUE(d.ok()) << d.status().message();
  // 100 W for 1 ms = 100 000 µJ.
  EXPECT_NEAR(d->total_uj, 1'000'000, 1e-6);
  ASSERT_EQ(d->kernels.size(), 3u);
  EXPECT_NEAR(d->kernels[0].energy_uj, 150'000, 1e-6);  // [1,2) alone, half of [2,3)
  EXPECT_NEAR(d->kernels[1].energy_uj, 150'000, 1e-6);
  EXPECT_NEAR(d->kernels[2].energy_uj, 100'000, 1e-6);
  EXPECT_EQ(d->kernels[0].shared_ns, kMs);
  EXPECT_EQ(d->kernels[2].shared_ns, 0);
  EXPECT_EQ(d->kernels[1].op_id, 1);
  EXPECT_EQ(d->busy_ns, 4 * kMs);
  EXPECT_NEAR(d->idle_uj, 600'000, 1e-6);
  // Inside the job [0.5, 8] ms: [0.5,1) + [4,6) + [7,8) idle.
  EXPECT_EQ(d->idle_in_job_ns, 7 * kMs / 2);
  EXPECT_NEAR(d->idle_in_job_uj, 350'000, 1e-6);
  EXPECT_NEAR(d->job_uj, 750'000, 1e-6);
  // Conservation, exactly.
  EXPECT_NEAR(d->kernels_uj + d->idle_uj, d->total_uj, 1e-6);
  EXPECT_EQ(d->sample_period_ns, kMs);
  EXPECT_EQ(d->shorter_than_period, 0u);
}

TEST(DeviceEnergy, FollowsThePowerCurveNotTheDuration) {
  // 50 W idle, 250 W while anything runs: the sampled curve puts more energy
  // in the busy stretches, and each kernel takes the energy of its own time.
  const Trace t = SmallGpuTrace();
  auto watts = [](int64_t ts) {
    const bool busy = (ts >= 1 * kMs && ts < 4 * kMs) || (ts >= 6 * kMs && ts < 7 * kMs);
    return busy ? 250.0 : 50.0;
  };
  auto d = AttributeDeviceEnergy(t, GpuSamples(0, 10 * kMs, kMs / 10, watts), "gpu-0", 0, 10 * kMs);
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR(d->kernels[0].energy_uj, 250'000 + 125'000, 1e-3);
  EXPECT_NEAR(d->kernels[2].energy_uj, 250'000, 1e-3);
  EXPECT_NEAR(d->idle_uj, 6 * 50'000, 1e-3);
  EXPECT_NEAR(d->kernels_uj + d->idle_uj, d->total_uj, 1e-6);
}

TEST(DeviceEnergy, ConservesEnergyOnRandomStreams) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    Trace t;
    t.strings = {"op", "kernel"};
    std::uniform_int_distribution<int64_t> when(-kMs, 21 * kMs), len(1'000, 3 * kMs);
    std::uniform_int_distribution<int> stream(0, 3), device(0, 1);
    const int n = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int i = 0; i < n; ++i) {
      const int64_t s = when(rng);
      t.device_activities.push_back(
          Kernel(s, s + len(rng), kNoId, device(rng) ? "cuda:1" : "cuda:0", stream(rng)));
    }
    std::uniform_real_distribution<double> w(30, 400);
    std::vector<double> watts(200);
    for (double& x : watts) x = w(rng);
    auto samples = GpuSamples(0, 20 * kMs, 137'000, [&](int64_t ts) { return watts[(ts / 137'000) % 200]; });
    auto d = AttributeDeviceEnergy(t, samples, "gpu-0", 2 * kMs, 18 * kMs);
    ASSERT_TRUE(d.ok()) << d.status().message();
    double sum = 0;
    for (const KernelEnergy& k : d->kernels) {
      EXPECT_GE(k.energy_uj, -1e-9);
      EXPECT_EQ(t.device_activities[k.activity].device, "cuda:0");
      sum += k.energy_uj;
    }
    EXPECT_NEAR(sum, d->kernels_uj, 1e-6 * d->total_uj);
    EXPECT_NEAR(sum + d->idle_uj, d->total_uj, 1e-9 * d->total_uj) << "round " << round;
    EXPECT_LE(d->idle_in_job_uj, d->idle_uj + 1e-9);
  }
}

TEST(DeviceEnergy, PowerOnlySamplesAndTheirErrors) {
  const Trace t = SmallGpuTrace();
  std::vector<EnergySample> power;
  for (int64_t ts = 0; ts <= 10 * kMs; ts += 20 * kMs / 10) {  // NVML power every 2 ms
    power.push_back({"gpu-0", ts, std::nan(""), 100'000.0, Provenance::kMeasured, "nvml"});
  }
  auto d = AttributeDeviceEnergy(t, power, "gpu-0", 0, 10 * kMs);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_NEAR(d->total_uj, 1'000'000, 1e-3);
  EXPECT_NEAR(d->kernels_uj + d->idle_uj, d->total_uj, 1e-6);
  EXPECT_EQ(d->sample_period_ns, 2 * kMs);
  EXPECT_EQ(d->shorter_than_period, 1u);  // K3 lasts 1 ms
  // Mixed provenance in one domain is refused; a domain that is not a GPU too.
  power.push_back({"gpu-0", 11 * kMs, 1.0, std::nan(""), Provenance::kEstimated, "x"});
  EXPECT_EQ(AttributeDeviceEnergy(t, power, "gpu-0", 0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AttributeDeviceEnergy(t, power, "cpu-package-0", 0, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(DeviceEnergy, DomainsNameCudaDevices) {
  EXPECT_EQ(DeviceOfDomain("gpu-0"), "cuda:0");
  EXPECT_EQ(DeviceOfDomain("gpu-12"), "cuda:12");
  EXPECT_EQ(DeviceOfDomain("gpu-integrated-0"), "");
  EXPECT_EQ(DeviceOfDomain("gpu-"), "");
  EXPECT_EQ(DeviceOfDomain("cpu-package-0"), "");
  const Trace t = SmallGpuTrace();
  EXPECT_TRUE(HasDeviceActivity(t, "gpu-0"));
  EXPECT_FALSE(HasDeviceActivity(t, "gpu-1"));
}

TEST(DeviceAttribution, ChargesOpsWithWhatTheyLaunched) {
  Trace t = SmallGpuTrace();
  // An activity no recorded op launched (a collective): unattributed.
  t.device_activities.push_back(Kernel(8 * kMs, 9 * kMs, kNoId));
  auto a = AttributeEnergy(t, GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 100.0; }), "gpu-0");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->basis, "device");
  EXPECT_EQ(a->provenance, Provenance::kMeasured);
  EXPECT_NEAR(a->ops[0].exclusive_uj, 150'000, 1e-6);
  EXPECT_NEAR(a->ops[1].exclusive_uj, 150'000, 1e-6);
  EXPECT_NEAR(a->ops[2].exclusive_uj, 100'000, 1e-6);
  EXPECT_NEAR(a->ops[3].exclusive_uj, 0, 1e-9);
  EXPECT_NEAR(a->ops[2].inclusive_uj, 100'000, 1e-6);
  EXPECT_EQ(a->DeviceTimeOf(0).device_ns, 2 * kMs);
  EXPECT_EQ(a->DeviceTimeOf(2).inclusive_device_ns, kMs);
  EXPECT_NEAR(a->unlinked_device_uj, 100'000, 1e-6);
  EXPECT_NEAR(a->attributed_uj + a->unattributed_uj, a->total_uj, 1e-6);
  // The job runs from the first op (0.5 ms) to the last activity's end (9 ms):
  // kernels outlive the host ops that queued them.
  EXPECT_EQ(a->ops_start_ns, kMs / 2);
  EXPECT_EQ(a->ops_end_ns, 9 * kMs);
  // Idle inside it: [0.5,1) + [4,6) + [7,8) = 3.5 ms; its own region, not
  // host idle.
  EXPECT_NEAR(a->device_idle_in_job_uj, 350'000, 1e-6);
  EXPECT_EQ(a->device_idle_in_job_ns, 7 * kMs / 2);
  EXPECT_NEAR(a->unclaimed_in_job_uj, 0, 1e-9);
  ASSERT_EQ(a->devices.size(), 1u);
  EXPECT_EQ(a->devices[0].kernels.size(), 4u);
}

TEST(DeviceAttribution, NestedOpsAddUpAndTheRecordersWorkIsNotTheJobs) {
  Trace t = SmallGpuTrace();
  t.strings = {"aten::linear", "kernel", "magneton::fingerprint"};
  t.ops[3].name_id = 2;  // op 3, nested in op 2, is the recorder's
  t.device_activities.push_back(Kernel(51 * kMs / 10, 52 * kMs / 10, 3));
  auto a = AttributeEnergy(t, GpuSamples(0, 10 * kMs, kMs / 10, [](int64_t) { return 100.0; }), "gpu-0");
  ASSERT_TRUE(a.ok());
  EXPECT_NEAR(a->ops[3].exclusive_uj, 10'000, 1e-6);
  EXPECT_NEAR(a->ops[2].inclusive_uj, 100'000, 1e-6);  // the fingerprint's kernel is not op 2's work
  EXPECT_NEAR(a->ops[2].recorder_uj, 10'000, 1e-6);
  EXPECT_NEAR(a->recorder_uj, 10'000, 1e-6);
  // The twin: without the recorder name the nested kernel is op 2's.
  t.ops[3].name_id = 0;
  auto b = AttributeEnergy(t, GpuSamples(0, 10 * kMs, kMs / 10, [](int64_t) { return 100.0; }), "gpu-0");
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR(b->ops[2].inclusive_uj, 110'000, 1e-6);
  EXPECT_NEAR(b->recorder_uj, 0, 1e-9);
}

TEST(DeviceAttribution, AGpuDomainWithoutActivityStaysOnHostTime) {
  Trace t = SmallGpuTrace();
  t.device_activities.clear();
  auto a = AttributeEnergy(t, GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 100.0; }), "gpu-0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->basis, "host");
  EXPECT_NEAR(a->ops[0].exclusive_uj, 100'000, 1e-6);  // its 1 ms on the host
}

TEST(DeviceAttribution, SumsAHostDomainAndAGpuOfOneProvenance) {
  const Trace t = SmallGpuTrace();
  std::vector<EnergySample> samples = GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 100.0; });
  for (const EnergySample& s : GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 20.0; }, "cpu-package-0")) {
    samples.push_back(s);
  }
  auto sum = AttributeEnergy(t, samples, "cpu-package-0+gpu-0");
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_EQ(sum->basis, "host+device");
  EXPECT_NEAR(sum->total_uj, 1'000'000 + 200'000, 1e-6);
  // Op 0: 1 ms on the host at 20 W, and its kernel's 150 000 µJ.
  EXPECT_NEAR(sum->ops[0].exclusive_uj, 20'000 + 150'000, 1e-6);
  EXPECT_EQ(sum->ops[0].exclusive_ns, kMs);
  EXPECT_EQ(sum->DeviceTimeOf(0).device_ns, 2 * kMs);
  EXPECT_NEAR(sum->attributed_uj + sum->unattributed_uj, sum->total_uj, 1e-6);
  // The GPU's job ends with K3 at 7 ms: idle inside it [0.5,1) + [4,6).
  EXPECT_NEAR(sum->device_idle_in_job_uj, 250'000, 1e-6);
  EXPECT_EQ(DomainParts("cpu-package-0+gpu-0"), (std::vector<std::string>{"cpu-package-0", "gpu-0"}));

  // Estimated host joules are never added to measured GPU ones.
  std::vector<EnergySample> mixed = GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 100.0; });
  for (const EnergySample& s :
       GpuSamples(0, 10 * kMs, kMs, [](int64_t) { return 20.0; }, "cpu-estimate", Provenance::kEstimated)) {
    mixed.push_back(s);
  }
  auto refused = AttributeEnergy(t, mixed, "cpu-estimate+gpu-0");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("never added"), std::string::npos);
}

}  // namespace
}  // namespace magneton::energy
