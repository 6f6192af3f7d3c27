// The perf power PMU, the estimate meter and discovery.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/clock.h"
#include "energy/perf_power_meter.h"
#include "energy/energy.h"
#include "fake_clock.h"
#include "test_util.h"

namespace magneton::energy {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::trunc) << text << "\n";
}

// Burns this thread's CPU for about `ms` of CPU time.
void BurnCpu(int ms) {
  int64_t until = ThreadCpuNowNs() + int64_t{ms} * 1'000'000;
  volatile double x = 1;
  while (ThreadCpuNowNs() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
}

TEST(PerfPowerMeterTest, ParsesEventSpecsAndCpuMasks) {
  EXPECT_EQ(ParsePerfEventConfig("event=0x02\n").value(), 2u);
  EXPECT_EQ(ParsePerfEventConfig("event=0x3b,umask=0x1").value(), 0x3bu);
  EXPECT_FALSE(ParsePerfEventConfig("umask=1").ok());
  EXPECT_EQ(ParseCpuList("0,18\n").value(), (std::vector<int>{0, 18}));
  EXPECT_EQ(ParseCpuList("0-3").value(), (std::vector<int>{0, 1, 2, 3}));
}

TEST(PerfPowerMeterTest, NoPowerPmuIsUnavailableWithReason) {
  auto meter = OpenPerfPowerMeter({.sysfs_root = testing::TempPath("nopmu")});
  ASSERT_FALSE(meter.ok());
  EXPECT_EQ(meter.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(meter.status().message().find("no 'power' PMU"), std::string::npos) << meter.status().message();
}

TEST(PerfPowerMeterTest, PmuTheKernelRejectsReportsPerfEventOpen) {
  // A fake PMU description with a type id no kernel has: discovery parses it,
  // perf_event_open refuses it, and the reason names the call.
  fs::path pmu = fs::path(testing::TempPath("fakepmu")) / "sys/bus/event_source/devices/power";
  WriteFile(pmu / "type", "987654");
  WriteFile(pmu / "cpumask", "0");
  WriteFile(pmu / "events/energy-pkg", "event=0x02");
  WriteFile(pmu / "events/energy-pkg.scale", "2.3283064365386962890625e-10");
  WriteFile(pmu / "events/energy-pkg.unit", "Joules");
  auto meter = OpenPerfPowerMeter({.sysfs_root = testing::TempPath("fakepmu")});
  ASSERT_FALSE(meter.ok());
  EXPECT_NE(meter.status().message().find("perf_event_open(power/energy-pkg/"), std::string::npos)
      << meter.status().message();
}

// The model on a scripted clock: idle power over wall time plus joules per
// process CPU-second, exactly (no perf counters, so the CPU-time branch).
TEST(EstimateMeterTest, IdlePowerOverWallTimePlusJoulesPerCpuSecond) {
  FakeClock clock;
  clock.Advance(0, /*process_cpu_ns=*/3'000'000'000);  // CPU the process used before the meter opened
  EstimateOptions options;
  options.model = EstimateModel{};
  options.model.idle_package_w = 2;
  options.model.joules_per_cpu_second = 10;
  options.use_perf_counters = false;
  options.clock = &clock;
  auto meter = OpenEstimateMeter(options);
  ASSERT_TRUE(meter.ok());
  EXPECT_EQ((*meter)->provenance(), Provenance::kEstimated);
  auto energy_uj = [&] {
    auto r = (*meter)->Read();
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r->t_ns, clock.MonotonicNowNs());
    return r->domains[0].energy_uj;
  };
  EXPECT_DOUBLE_EQ(energy_uj(), 0) << "counted from the meter's opening";
  clock.Advance(50'000'000);  // 50 ms asleep: 2 W · 0.05 s = 0.1 J
  const double asleep = energy_uj();
  EXPECT_DOUBLE_EQ(asleep, 100'000);
  clock.Advance(50'000'000, 50'000'000);  // 50 ms burning one core: + 10 J/s · 0.05 s
  const double one_core = energy_uj() - asleep;
  EXPECT_DOUBLE_EQ(one_core, 100'000 + 500'000);
  EXPECT_GT(one_core, asleep) << "burning costs more than sleeping";
  clock.Advance(50'000'000, 100'000'000);  // two threads: process CPU time counts both
  EXPECT_DOUBLE_EQ(energy_uj() - asleep - one_core, 100'000 + 1'000'000);

  auto r = (*meter)->Read();
  ASSERT_TRUE(r.ok());
  auto samples = ToEnergySamples(**meter, *r);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].domain, "cpu-estimate");
  EXPECT_EQ(samples[0].provenance, Provenance::kEstimated);
  EXPECT_EQ(samples[0].meter, "estimate");
  EXPECT_EQ(samples[0].t_ns, clock.MonotonicNowNs());
}

// Without a clock in the options the meter reads the system clocks: CPU this
// process burns shows up (no magnitudes asserted: they depend on the machine).
TEST(EstimateMeterTest, DefaultsToTheSystemClocks) {
  EstimateOptions options;
  options.model = EstimateModel{};
  options.model.idle_package_w = 0;   // only the CPU-driven part
  options.use_perf_counters = false;  // the branch the fake clock checks exactly
  auto meter = OpenEstimateMeter(options);
  ASSERT_TRUE(meter.ok());
  const int64_t before = MonotonicNowNs();
  auto r1 = (*meter)->Read();
  BurnCpu(5);
  auto r2 = (*meter)->Read();
  const int64_t after = MonotonicNowNs();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_GE(r1->t_ns, before);
  EXPECT_LE(r2->t_ns, after);
  // The process's CPU clock advanced by at least the 5 ms this thread burnt.
  EXPECT_GT(r2->domains[0].energy_uj - r1->domains[0].energy_uj, 0);
}

TEST(EstimateMeterTest, ConstantsComeFromTheEnvironment) {
  setenv("MAGNETON_ESTIMATE_IDLE_W", "3.5", 1);
  setenv("MAGNETON_ESTIMATE_J_PER_CPU_S", "7", 1);
  setenv("MAGNETON_ESTIMATE_NJ_PER_CYCLE", "bogus", 1);
  EstimateModel m = EstimateModel::FromEnv();
  unsetenv("MAGNETON_ESTIMATE_IDLE_W");
  unsetenv("MAGNETON_ESTIMATE_J_PER_CPU_S");
  unsetenv("MAGNETON_ESTIMATE_NJ_PER_CYCLE");
  EXPECT_DOUBLE_EQ(m.idle_package_w, 3.5);
  EXPECT_DOUBLE_EQ(m.joules_per_cpu_second, 7);
  EXPECT_DOUBLE_EQ(m.nanojoules_per_cycle, EstimateModel{}.nanojoules_per_cycle);  // malformed: default kept
}

DiscoveryOptions NothingMeasured() {
  DiscoveryOptions o;
  o.rapl.sysfs_root = testing::TempPath("bare");
  o.perf.sysfs_root = testing::TempPath("bare");
  o.nvml.library_path = "/nonexistent/libnvidia-ml.so.1";
  return o;
}

TEST(EnergyDiscoveryTest, FallsBackToTheEstimateAndSaysWhy) {
  MeterDiscovery d = DiscoverMeters(NothingMeasured());
  ASSERT_EQ(d.probes.size(), 4u);
  for (const auto& p : d.probes) {
    if (p.name == "estimate") {
      EXPECT_TRUE(p.status.ok());
      EXPECT_EQ(p.provenance, Provenance::kEstimated);
    } else {
      EXPECT_FALSE(p.status.ok()) << p.name;
      EXPECT_FALSE(p.status.message().empty()) << p.name;
      EXPECT_EQ(p.provenance, Provenance::kMeasured);
    }
  }
  ASSERT_EQ(d.chosen.size(), 1u);
  EXPECT_EQ(d.probes[d.chosen[0]].name, "estimate");
  EXPECT_EQ(d.chosen_provenance, Provenance::kEstimated);
}

TEST(EnergyDiscoveryTest, PrefersMeasuredAndNeverAddsTheEstimate) {
  DiscoveryOptions o = NothingMeasured();
  fs::path pc = fs::path(*o.rapl.sysfs_root) / "sys/class/powercap/intel-rapl:0";
  WriteFile(pc / "name", "package-0");
  WriteFile(pc / "energy_uj", "12345");
  WriteFile(pc / "max_energy_range_uj", "262143328850");
  o.nvml.library_path = FAKE_NVML_PATH;
  setenv("FAKE_NVML_MODE", "normal", 1);
  MeterDiscovery d = DiscoverMeters(o);
  std::vector<std::string> chosen;
  for (size_t i : d.chosen) chosen.push_back(d.probes[i].name);
  EXPECT_EQ(chosen, (std::vector<std::string>{"rapl", "nvml"}));
  EXPECT_EQ(d.chosen_provenance, Provenance::kMeasured);
  for (size_t i : d.chosen) EXPECT_EQ(d.probes[i].meter->provenance(), Provenance::kMeasured);
}

}  // namespace
}  // namespace magneton::energy
