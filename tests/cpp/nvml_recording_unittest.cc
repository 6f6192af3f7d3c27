// A recording on a GPU whose driver has the instant-power field (the fake
// libnvidia-ml, tests/cpp/fake_nvml.cc): the real Recorder, meter discovery
// and sampler write 1 kHz power samples and say in meta how the power was
// read and how it compares with the energy counter; `show` prints both.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "energy/energy_curve.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "report/summary.h"
#include "test_util.h"

namespace magneton::testing {
namespace {

std::string MetaOf(const Trace& trace, const std::string& key) {
  auto it = trace.meta.extra.find(key);
  return it == trace.meta.extra.end() ? "" : it->second;
}

class NvmlRecording : public ::testing::Test {
 protected:
  void SetUp() override {
    // No CPU counters (an empty sysfs), one fake GPU: the recording measures it alone.
    sysfs_ = TempPath("empty-sysfs");
    std::filesystem::create_directories(sysfs_);
    setenv("MAGNETON_SYSFS_ROOT", sysfs_.c_str(), 1);
    setenv("MAGNETON_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_DEVICE_COUNT", "1", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("MAGNETON_NVML_SOURCE");
  }
  void TearDown() override {
    for (const char* name : {"MAGNETON_SYSFS_ROOT", "MAGNETON_NVML_LIBRARY", "FAKE_NVML_DEVICE_COUNT", "FAKE_NVML_MODE"})
      unsetenv(name);
  }
  StatusOr<Trace> RecordFor(const char* mode, int sleep_ms) {
    setenv("FAKE_NVML_MODE", mode, 1);
    const std::string path = TempPath(std::string("nvml-") + mode + ".mtrace");
    RecorderOptions options;
    options.sample_energy = true;
    Status started = Recorder::Start(path, RunMetadata{}, options);
    if (!started.ok()) return started;
    usleep(sleep_ms * 1000);
    MAGNETON_RETURN_IF_ERROR(Recorder::Stop());
    return ReadTrace(path);
  }
  std::string sysfs_;
};

TEST_F(NvmlRecording, InstantPowerIsSampledAndItsSourceIsSaid) {
  auto trace = RecordFor("instant", 100);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(MetaOf(*trace, "energy.meters"), "nvml");
  EXPECT_EQ(MetaOf(*trace, "energy.provenance"), "measured");
  EXPECT_NE(MetaOf(*trace, "energy.nvml.gpu-0.source").find("instant power (NVML_FI_DEV_POWER_INSTANT) read every 1 ms"),
            std::string::npos)
      << MetaOf(*trace, "energy.nvml.gpu-0.source");
  // 250 W for 100 ms is about 25 J: far above the counter's 1 mJ step, so the check is made.
  EXPECT_NE(MetaOf(*trace, "energy.nvml.gpu-0.instant_vs_counter").find("integrated instant power"), std::string::npos);

  std::vector<EnergySample> gpu;
  for (const EnergySample& s : trace->energy_samples)
    if (s.domain == "gpu-0") gpu.push_back(s);
  ASSERT_GE(gpu.size(), 2u);
  for (const EnergySample& s : gpu) {
    EXPECT_EQ(s.power_mw, 250'000);
    EXPECT_EQ(s.provenance, Provenance::kMeasured);
  }
  // Constant power: the integral is exact, 250 W over the sampled window.
  Provenance provenance;
  auto curve = energy::DomainCurve(trace->energy_samples, "gpu-0", &provenance);
  ASSERT_TRUE(curve.ok()) << curve.status().message();
  const double expected_uj = 250'000.0 * static_cast<double>(curve->end() - curve->start()) * 1e-6;
  EXPECT_NEAR(curve->total(), expected_uj, 1e-6 * expected_uj);

  const std::string shown = FormatEnergySummary(*trace, 5);
  EXPECT_NE(shown.find("power: instant power (NVML_FI_DEV_POWER_INSTANT)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("integrated instant power"), std::string::npos) << shown;
}

// Its twin: a driver without the field records the energy counter, and
// says so.
TEST_F(NvmlRecording, ACounterOnlyGpuSaysItsSource) {
  auto trace = RecordFor("normal", 30);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(MetaOf(*trace, "energy.nvml.gpu-0.source"), "total-energy counter read every 5 ms");
  EXPECT_EQ(MetaOf(*trace, "energy.nvml.gpu-0.instant_vs_counter"), "");
  const std::string shown = FormatEnergySummary(*trace, 5);
  EXPECT_NE(shown.find("power: total-energy counter read every 5 ms"), std::string::npos) << shown;
}

}  // namespace
}  // namespace magneton::testing
