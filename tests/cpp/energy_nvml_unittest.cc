// NVML against the fake libnvidia-ml built by tests/cpp/energy.cmake.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "base/clock.h"
#include "energy/sampler.h"

#include "energy/energy.h"

namespace magneton::energy {
namespace {

class NvmlMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FAKE_NVML_MODE");
    unsetenv("FAKE_NVML_DEVICE_COUNT");
    unsetenv("LOCAL_RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("FAKE_NVML_COUNTER_PERCENT");
    unsetenv("FAKE_NVML_REFRESH_US");
    unsetenv("FAKE_NVML_REFRESH_READS");
    unsetenv("MAGNETON_NVML_SOURCE");
  }
  StatusOr<std::unique_ptr<Meter>> Open(const char* mode, std::optional<std::string> visible = std::nullopt,
                                        const char* library = FAKE_NVML_PATH,
                                        std::optional<int> local_rank = std::nullopt,
                                        std::optional<std::string> source = std::nullopt) {
    setenv("FAKE_NVML_MODE", mode, 1);
    NvmlOptions options;
    options.source = std::move(source);
    options.library_path = library;
    options.cuda_visible_devices = std::move(visible);
    options.local_rank = local_rank;
    return OpenNvmlMeter(options);
  }
};

TEST_F(NvmlMeterTest, ReadsTheEnergyCounterOfEveryGpu) {
  auto meter = Open("normal");
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  ASSERT_EQ((*meter)->domains().size(), 2u);
  EXPECT_EQ((*meter)->domains()[0].name, "gpu-0");
  EXPECT_EQ((*meter)->domains()[1].name, "gpu-1");
  EXPECT_EQ((*meter)->kind(), MeterKind::kEnergyCounter);
  EXPECT_EQ((*meter)->provenance(), Provenance::kMeasured);
  auto r1 = (*meter)->Read();
  auto r2 = (*meter)->Read();
  ASSERT_TRUE(r1.ok() && r2.ok());
  // mJ -> µJ; each read of the fake advances 100 mJ.
  EXPECT_DOUBLE_EQ(r1->domains[0].energy_uj, (1'000'000 + 100) * 1000.0);
  EXPECT_DOUBLE_EQ(r2->domains[0].energy_uj - r1->domains[0].energy_uj, 100'000);
  EXPECT_DOUBLE_EQ(r1->domains[1].energy_uj, (2'000'000 + 100) * 1000.0);
  EXPECT_EQ(ToEnergySamples(**meter, *r1)[0].meter, "nvml");
}

TEST_F(NvmlMeterTest, CounterResetIsUnwrapped) {
  auto meter = Open("wrap");
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  double first = 0, previous = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = (*meter)->Read();
    ASSERT_TRUE(r.ok());
    double e = r->domains[0].energy_uj;
    if (i == 0) first = e;
    EXPECT_GE(e, previous);
    previous = e;
  }
  // Raw reads 1..5: base+100, base+200, then 0, 100, 200 after the restart.
  EXPECT_DOUBLE_EQ(previous - first, 100'000 + 0 + 100'000 + 100'000);
}

TEST_F(NvmlMeterTest, PowerOnlyGpusAreIntegrated) {
  auto meter = Open("power_only");
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  EXPECT_EQ((*meter)->kind(), MeterKind::kPowerSamples);
  auto r1 = (*meter)->Read();
  usleep(20'000);
  auto r2 = (*meter)->Read();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_DOUBLE_EQ(r2->domains[0].power_mw, 250'000);
  // 250 W over the interval; mW · ns · 1e-6 = µJ.
  double expected_uj = 250'000.0 * static_cast<double>(r2->t_ns - r1->t_ns) * 1e-6;
  EXPECT_NEAR(r2->domains[0].energy_uj - r1->domains[0].energy_uj, expected_uj, 1e-6 * expected_uj);
  EXPECT_GT(expected_uj, 250'000.0 * 0.019 * 1000);
}

TEST_F(NvmlMeterTest, MigIsRefusedWithAClearMessage) {
  auto meter = Open("mig");
  ASSERT_FALSE(meter.ok());
  EXPECT_EQ(meter.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(meter.status().message().find("MIG enabled"), std::string::npos) << meter.status().message();
  auto by_uuid = Open("normal", "MIG-4f6a1c3e-0000");
  ASSERT_FALSE(by_uuid.ok());
  EXPECT_NE(by_uuid.status().message().find("MIG"), std::string::npos);
}

TEST_F(NvmlMeterTest, MissingSymbolIsTheReason) {
  auto meter = Open("normal", std::nullopt, FAKE_NVML_NOCOUNT_PATH);
  ASSERT_FALSE(meter.ok());
  EXPECT_EQ(meter.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(meter.status().message().find("nvmlDeviceGetCount_v2"), std::string::npos) << meter.status().message();
}

TEST_F(NvmlMeterTest, MissingLibraryIsTheReason) {
  auto meter = Open("normal", std::nullopt, "/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(meter.ok());
  EXPECT_NE(meter.status().message().find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(meter.status().message().find("no NVIDIA driver"), std::string::npos);
}

TEST_F(NvmlMeterTest, InitFailureIsTheReason) {
  auto meter = Open("init_fail");
  ASSERT_FALSE(meter.ok());
  EXPECT_NE(meter.status().message().find("nvmlInit failed: Driver Not Loaded"), std::string::npos)
      << meter.status().message();
}

TEST_F(NvmlMeterTest, LibraryPathFromEnvironment) {
  setenv("MAGNETON_NVML_LIBRARY", FAKE_NVML_PATH, 1);
  setenv("FAKE_NVML_MODE", "normal", 1);
  auto meter = OpenNvmlMeter(NvmlOptions{});
  unsetenv("MAGNETON_NVML_LIBRARY");
  EXPECT_TRUE(meter.ok()) << meter.status().message();
}

// A rank of a distributed job measures cuda:<LOCAL_RANK> only, under the
// CUDA index its training code uses, not the GPUs of the other ranks.
TEST_F(NvmlMeterTest, ARankMeasuresTheGpuOfItsLocalRank) {
  auto rank1 = Open("normal", std::nullopt, FAKE_NVML_PATH, 1);
  ASSERT_TRUE(rank1.ok()) << rank1.status().message();
  ASSERT_EQ((*rank1)->domains().size(), 1u);
  EXPECT_EQ((*rank1)->domains()[0].name, "gpu-1");
  auto r = (*rank1)->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->domains[0].energy_uj, (2'000'000 + 100) * 1000.0);  // physical GPU 1

  // CUDA_VISIBLE_DEVICES reorders: cuda:1 is physical GPU 0.
  auto reordered = Open("normal", "1,0", FAKE_NVML_PATH, 1);
  ASSERT_TRUE(reordered.ok()) << reordered.status().message();
  ASSERT_EQ((*reordered)->domains().size(), 1u);
  EXPECT_EQ((*reordered)->domains()[0].name, "gpu-1");
  r = (*reordered)->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->domains[0].energy_uj, (1'000'000 + 100) * 1000.0);

  // A local rank with no GPU of its own (more ranks than GPUs): every visible GPU.
  auto past = Open("normal", std::nullopt, FAKE_NVML_PATH, 5);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ((*past)->domains().size(), 2u);

  // From the environment torchrun gives each rank; LOCAL_RANK alone is not a rank.
  setenv("LOCAL_RANK", "1", 1);
  auto alone = Open("normal");
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ((*alone)->domains().size(), 2u);
  setenv("WORLD_SIZE", "2", 1);
  auto from_env = Open("normal");
  unsetenv("LOCAL_RANK");
  unsetenv("WORLD_SIZE");
  ASSERT_TRUE(from_env.ok()) << from_env.status().message();
  ASSERT_EQ((*from_env)->domains().size(), 1u);
  EXPECT_EQ((*from_env)->domains()[0].name, "gpu-1");
}

TEST_F(NvmlMeterTest, HonoursCudaVisibleDevices) {
  // Index 1 only: CUDA calls it cuda:0, so its domain is gpu-0.
  auto one = Open("normal", "1");
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ((*one)->domains().size(), 1u);
  auto r = (*one)->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->domains[0].energy_uj, (2'000'000 + 100) * 1000.0);  // physical GPU 1

  auto by_uuid = Open("normal", "GPU-fake-1,0");
  ASSERT_TRUE(by_uuid.ok()) << by_uuid.status().message();
  EXPECT_EQ((*by_uuid)->domains().size(), 2u);

  auto truncated = Open("normal", "0,7,1");  // CUDA stops at the invalid 7
  ASSERT_TRUE(truncated.ok());
  EXPECT_EQ((*truncated)->domains().size(), 1u);

  auto none = Open("normal", "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("hides every GPU"), std::string::npos);

  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  auto from_env = Open("normal");
  unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ((*from_env)->domains().size(), 1u);
}

std::map<std::string, std::string> NotesOf(const Meter& meter) {
  std::map<std::string, std::string> out;
  for (auto& [key, text] : meter.Notes()) out[key] = text;
  return out;
}

// Newer drivers have the instant-power field: read at 1 kHz and integrated,
// so kernels of a few ms get their own power, not a 20-50 ms average.
TEST_F(NvmlMeterTest, InstantPowerIsReadAtOneKilohertzAndIntegrated) {
  auto meter = Open("instant");
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  EXPECT_EQ((*meter)->kind(), MeterKind::kPowerSamples);
  EXPECT_EQ((*meter)->update_period_ns(), 1'000'000);
  Sampler sampler(meter->get(), [](EnergySample) {});
  EXPECT_EQ(sampler.period_ns(), 1'000'000);
  auto r1 = (*meter)->Read();
  usleep(20'000);
  auto r2 = (*meter)->Read();
  ASSERT_TRUE(r1.ok() && r2.ok()) << (r1.ok() ? r2.status().message() : r1.status().message());
  EXPECT_DOUBLE_EQ(r2->domains[1].power_mw, 250'000);
  const double expected_uj = 250'000.0 * static_cast<double>(r2->t_ns - r1->t_ns) * 1e-6;
  EXPECT_NEAR(r2->domains[1].energy_uj - r1->domains[1].energy_uj, expected_uj, 1e-6 * expected_uj);
  auto notes = NotesOf(**meter);
  EXPECT_NE(notes["gpu-0.source"].find("instant power (NVML_FI_DEV_POWER_INSTANT) read every 1 ms"),
            std::string::npos)
      << notes["gpu-0.source"];
  EXPECT_NE(notes["gpu-0.source"].find("energy counter read in the same call"), std::string::npos);

  // Its twin: a driver without the field falls back to the counter.
  auto counter = Open("normal");
  ASSERT_TRUE(counter.ok());
  EXPECT_EQ((*counter)->update_period_ns(), 5'000'000);
  EXPECT_EQ(NotesOf(**counter)["gpu-0.source"], "total-energy counter read every 5 ms");
}

// The integral of instant power is checked against the energy counter read
// in the same call; the note says by how much they differ.
TEST_F(NvmlMeterTest, InstantPowerIsCheckedAgainstTheEnergyCounter) {
  // Each read is stamped at its midpoint while the fake counts energy at the
  // instant of its call: the ratio is exact up to how long the two reads
  // took, which the test measures to bound it.
  auto check = [&](int percent, const std::string& domain) {
    setenv("FAKE_NVML_COUNTER_PERCENT", std::to_string(percent).c_str(), 1);
    auto meter = Open("instant");
    ASSERT_TRUE(meter.ok()) << meter.status().message();
    const int64_t t0 = MonotonicNowNs();
    ASSERT_TRUE((*meter)->Read().ok());
    const int64_t t1 = MonotonicNowNs();
    usleep(100'000);  // 250 W: about 25 J, far above the counter's 1 mJ step
    const int64_t t2 = MonotonicNowNs();
    ASSERT_TRUE((*meter)->Read().ok());
    const int64_t t3 = MonotonicNowNs();
    const std::string note = NotesOf(**meter)[domain + ".instant_vs_counter"];
    const size_t paren = note.rfind('(');
    ASSERT_NE(paren, std::string::npos) << note;
    const double pct = std::stod(note.substr(paren + 1));
    const double shortest = static_cast<double>(t2 - t1), longest = static_cast<double>(t3 - t0);
    const double low = 100.0 * (100.0 / percent * shortest / longest - 1) - 0.05;
    const double high = 100.0 * (100.0 / percent * longest / shortest - 1) + 0.05;
    EXPECT_GE(pct, low) << note;
    EXPECT_LE(pct, high) << note;
    EXPECT_NE(note.find("integrated instant power"), std::string::npos) << note;
  };
  check(90, "gpu-0");   // integrated 250 W against a counter of 225 W: about +11.1%
  check(100, "gpu-1");  // agreeing: about 0%

  // Without the energy field there is nothing to check against, and the note says none.
  auto alone = Open("instant_nocounter");
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  ASSERT_TRUE((*alone)->Read().ok());
  usleep(10'000);
  ASSERT_TRUE((*alone)->Read().ok());
  auto alone_notes = NotesOf(**alone);
  EXPECT_EQ(alone_notes.count("gpu-0.instant_vs_counter"), 0u);
  EXPECT_EQ(alone_notes["gpu-0.source"].find("energy counter"), std::string::npos) << alone_notes["gpu-0.source"];
}

// How often the driver refreshes the instant value, from the field's own
// timestamps: reads faster than that repeat one value.
TEST_F(NvmlMeterTest, InstantRefreshPeriodComesFromTheFieldTimestamps) {
  setenv("FAKE_NVML_REFRESH_US", "10000", 1);
  setenv("FAKE_NVML_REFRESH_READS", "5", 1);  // a new value every 5 reads: 10 ms apart
  auto meter = Open("instant");
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  for (int i = 0; i < 60; ++i) ASSERT_TRUE((*meter)->Read().ok());
  EXPECT_EQ(NotesOf(**meter)["gpu-0.instant_refresh_us"], "10000");
}

TEST_F(NvmlMeterTest, ThePowerSourceCanBeChosen) {
  auto counter = Open("instant", std::nullopt, FAKE_NVML_PATH, std::nullopt, "counter");
  ASSERT_TRUE(counter.ok()) << counter.status().message();
  EXPECT_EQ((*counter)->kind(), MeterKind::kEnergyCounter);

  // A reader that reads seldom (replay's rounds) takes the counter first,
  // and the best of the rest where there is none.
  auto sparse = Open("instant", std::nullopt, FAKE_NVML_PATH, std::nullopt, "counter-first");
  ASSERT_TRUE(sparse.ok()) << sparse.status().message();
  EXPECT_EQ((*sparse)->kind(), MeterKind::kEnergyCounter);
  auto sparse_no_counter = Open("power_only", std::nullopt, FAKE_NVML_PATH, std::nullopt, "counter-first");
  ASSERT_TRUE(sparse_no_counter.ok()) << sparse_no_counter.status().message();
  EXPECT_EQ((*sparse_no_counter)->kind(), MeterKind::kPowerSamples);

  setenv("MAGNETON_NVML_SOURCE", "average", 1);
  auto average = Open("instant");
  ASSERT_TRUE(average.ok()) << average.status().message();
  EXPECT_EQ((*average)->kind(), MeterKind::kPowerSamples);
  EXPECT_EQ((*average)->update_period_ns(), 20'000'000);
  unsetenv("MAGNETON_NVML_SOURCE");

  auto missing = Open("normal", std::nullopt, FAKE_NVML_PATH, std::nullopt, "instant");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("gpu-0 has no instant power"), std::string::npos)
      << missing.status().message();
  EXPECT_NE(missing.status().message().find("older drivers lack the field"), std::string::npos) << missing.status().message();

  auto no_counter = Open("power_only", std::nullopt, FAKE_NVML_PATH, std::nullopt, "counter");
  ASSERT_FALSE(no_counter.ok());
  EXPECT_NE(no_counter.status().message().find("no total-energy counter"), std::string::npos);

  auto bogus = Open("normal", std::nullopt, FAKE_NVML_PATH, std::nullopt, "fast");
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace magneton::energy
