// RAPL via a fake /sys/class/powercap tree in a temp dir (MAGNETON_SYSFS_ROOT
// or RaplOptions::sysfs_root points the meter at it).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "energy/counter_unwrap.h"
#include "energy/rapl_meter.h"
#include "energy/energy.h"
#include "test_util.h"

namespace magneton::energy {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  // Truncate in place (same inode), as sysfs values change under a kept fd.
  std::ofstream(path, std::ios::trunc) << text << "\n";
}

struct FakeZone {
  std::string dir, name;
  uint64_t energy_uj, range_uj;
};

// Two packages, each with a dram sub-zone; package 0 also has core; psys on
// top; an intel-rapl-mmio duplicate of package 0 that must be ignored.
fs::path MakeTree(const std::vector<FakeZone>& zones) {
  fs::path root = testing::TempPath("sysroot");
  fs::path pc = root / "sys/class/powercap";
  fs::create_directories(pc / "intel-rapl");  // the control type: no energy
  for (const auto& z : zones) {
    fs::create_directories(pc / z.dir);
    WriteFile(pc / z.dir / "name", z.name);
    WriteFile(pc / z.dir / "energy_uj", std::to_string(z.energy_uj));
    WriteFile(pc / z.dir / "max_energy_range_uj", std::to_string(z.range_uj));
  }
  return root;
}

RaplOptions At(const std::string& root) {
  RaplOptions options;
  options.sysfs_root = root;
  return options;
}

const std::vector<FakeZone> kServer = {
    {"intel-rapl:0", "package-0", 1000, 262143328850},   {"intel-rapl:0:0", "dram", 200, 65712999613},
    {"intel-rapl:0:1", "core", 500, 262143328850},       {"intel-rapl:1", "package-1", 3000, 262143328850},
    {"intel-rapl:1:0", "dram", 400, 65712999613},        {"intel-rapl:2", "psys", 9000, 262143328850},
    {"intel-rapl-mmio:0", "package-0", 1000, 262143328850},
};

TEST(RaplMeterTest, ListsEveryZoneAndTotalsOnlyPackagesAndDram) {
  fs::path root = MakeTree(kServer);
  auto meter = OpenRaplMeter(At(root.string()));
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  std::vector<std::string> names;
  std::vector<bool> in_total;
  for (const auto& d : (*meter)->domains()) {
    names.push_back(d.name);
    in_total.push_back(d.counts_in_total);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-package-0", "dram-0", "core-0", "cpu-package-1", "dram-1", "psys"}));
  EXPECT_EQ(in_total, (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_EQ((*meter)->kind(), MeterKind::kEnergyCounter);
  EXPECT_EQ((*meter)->provenance(), Provenance::kMeasured);
  auto reading = (*meter)->Read();
  ASSERT_TRUE(reading.ok()) << reading.status().message();
  EXPECT_DOUBLE_EQ(TotalEnergyUj(**meter, *reading), 1000 + 200 + 3000 + 400);
  auto samples = ToEnergySamples(**meter, *reading);
  ASSERT_EQ(samples.size(), 6u);
  EXPECT_EQ(samples[0].meter, "rapl");
  EXPECT_EQ(samples[0].provenance, Provenance::kMeasured);
  EXPECT_TRUE(std::isnan(samples[0].power_mw));
}

TEST(RaplMeterTest, UnwrapsAWrapMidRunFromRewrittenFiles) {
  fs::path root = MakeTree({{"intel-rapl:0", "package-0", 900'000, 1'000'000},
                            {"intel-rapl:0:0", "dram", 10, 1'000'000}});
  // Through the environment, as `magneton record` would see it.
  setenv("MAGNETON_SYSFS_ROOT", root.c_str(), 1);
  auto meter = OpenRaplMeter();
  unsetenv("MAGNETON_SYSFS_ROOT");
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  fs::path pkg = root / "sys/class/powercap/intel-rapl:0/energy_uj";
  auto r1 = (*meter)->Read();
  WriteFile(pkg, "950000");
  auto r2 = (*meter)->Read();
  WriteFile(pkg, "100000");  // wrapped: 50000 to the top, then 100000
  auto r3 = (*meter)->Read();
  WriteFile(pkg, "150000");
  auto r4 = (*meter)->Read();
  ASSERT_TRUE(r1.ok() && r2.ok() && r3.ok() && r4.ok());
  EXPECT_DOUBLE_EQ(r1->domains[0].energy_uj, 900'000);
  EXPECT_DOUBLE_EQ(r2->domains[0].energy_uj, 950'000);
  EXPECT_DOUBLE_EQ(r3->domains[0].energy_uj, 1'100'000);
  EXPECT_DOUBLE_EQ(r4->domains[0].energy_uj, 1'150'000);
  EXPECT_LE(r1->t_ns, r2->t_ns);
  // 1 J range at up to 1000 W traverses in 1 ms: poll at most every 0.5 ms.
  EXPECT_EQ((*meter)->max_poll_period_ns(), 500'000);
}

TEST(RaplMeterTest, AmdRaplZonesAreRead) {
  fs::path root = MakeTree({{"amd-rapl:0", "package-0", 5, 1'000'000'000}});
  auto meter = OpenRaplMeter(At(root.string()));
  ASSERT_TRUE(meter.ok()) << meter.status().message();
  ASSERT_EQ((*meter)->domains().size(), 1u);
  EXPECT_EQ((*meter)->domains()[0].name, "cpu-package-0");
}

// The suite runs as root, and root reads any mode-000 file, so chmod cannot
// produce EACCES here. Two stand-ins: an injected file reader that returns
// what open(2) returns for a non-root user, and energy_uj made a directory
// (read(2) then fails for root too, with EISDIR).
TEST(RaplMeterTest, PermissionDeniedSaysHowToGrantAccess) {
  fs::path root = MakeTree(kServer);
  RaplOptions options;
  options.sysfs_root = root.string();
  options.read_file = [](const std::string& path) -> StatusOr<std::string> {
    if (path.ends_with("/energy_uj")) return PermissionDenied(path + ": Permission denied");
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto meter = OpenRaplMeter(options);
  ASSERT_FALSE(meter.ok());
  EXPECT_EQ(meter.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(meter.status().message().find("chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj"), std::string::npos)
      << meter.status().message();
  EXPECT_NE(meter.status().message().find("udev"), std::string::npos);
}

TEST(RaplMeterTest, UnreadableEnergyFileIsAnError) {
  fs::path root = MakeTree({{"intel-rapl:0", "package-0", 1, 1000}});
  fs::path energy = root / "sys/class/powercap/intel-rapl:0/energy_uj";
  fs::remove(energy);
  fs::create_directory(energy);
  auto meter = OpenRaplMeter(At(root.string()));
  ASSERT_FALSE(meter.ok());
  EXPECT_NE(meter.status().message().find("energy_uj"), std::string::npos) << meter.status().message();
}

TEST(RaplMeterTest, NoPowercapIsUnavailableWithReason) {
  auto meter = OpenRaplMeter(At(testing::TempPath("empty")));
  ASSERT_FALSE(meter.ok());
  EXPECT_EQ(meter.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(meter.status().message().find("powercap"), std::string::npos);
}

TEST(RaplCounterUnwrapTest, SuccessiveRawReadingsBecomeMonotonic) {
  CounterUnwrapper u(1000);
  EXPECT_DOUBLE_EQ(u.Feed(990), 990);
  EXPECT_DOUBLE_EQ(u.Feed(995), 995);
  EXPECT_DOUBLE_EQ(u.Feed(5), 1005);    // wrap 1
  EXPECT_DOUBLE_EQ(u.Feed(500), 1500);
  EXPECT_DOUBLE_EQ(u.Feed(400), 2400);  // wrap 2
  EXPECT_EQ(u.wraps(), 2);
}

TEST(RaplCounterUnwrapTest, UnknownRangeTreatsDecreaseAsReset) {
  CounterUnwrapper u;
  EXPECT_DOUBLE_EQ(u.Feed(100), 100);
  EXPECT_DOUBLE_EQ(u.Feed(150), 150);
  EXPECT_DOUBLE_EQ(u.Feed(20), 170);
}

TEST(RaplCounterUnwrapTest, PollPeriodNeverMissesAWrap) {
  // A typical package range (~262 kJ) at 1000 W wraps after 262 s.
  EXPECT_EQ(MaxPollPeriodNs(262'143'328'850, 1000), 131'071'664'425);
  // DRAM's smaller range: ~65.7 kJ -> poll within 32.9 s.
  EXPECT_EQ(MaxPollPeriodNs(65'712'999'613, 1000), 32'856'499'806);
  EXPECT_EQ(MaxPollPeriodNs(0, 1000), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace magneton::energy
