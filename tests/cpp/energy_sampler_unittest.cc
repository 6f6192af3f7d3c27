// The sampler thread against fake meters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "base/clock.h"
#include "energy/energy.h"
#include "energy/sampler.h"

namespace magneton::energy {
namespace {

// A counter that advances on every read (or every `change_every_ns`), with
// the update period it claims.
class FakeMeter : public Meter {
 public:
  FakeMeter(int64_t update_period_ns, int64_t change_every_ns = 0, int64_t max_poll_ns = INT64_MAX)
      : update_ns_(update_period_ns), change_ns_(change_every_ns), max_poll_ns_(max_poll_ns) {}
  std::string_view name() const override { return "fake"; }
  const std::vector<MeterDomain>& domains() const override { return domains_; }
  MeterKind kind() const override { return MeterKind::kEnergyCounter; }
  int64_t update_period_ns() const override { return update_ns_; }
  int64_t max_poll_period_ns() const override { return max_poll_ns_; }
  Provenance provenance() const override { return Provenance::kMeasured; }
  StatusOr<MeterReading> Read() override {
    reads.fetch_add(1);
    if (fail) return Unavailable("fake meter broke");
    MeterReading r;
    r.t_ns = MonotonicNowNs();
    double e = change_ns_ > 0 ? static_cast<double>(r.t_ns / change_ns_) : static_cast<double>(reads.load());
    r.domains.push_back({e, kNaN});
    return r;
  }
  std::atomic<int64_t> reads{0};
  bool fail = false;

 private:
  int64_t update_ns_, change_ns_, max_poll_ns_;
  std::vector<MeterDomain> domains_ = {{"fake-0", true}};
};

// Rates and CPU shares are not asserted here: they depend on how loaded the
// machine is. bench/sampler measures them (docs/PERFORMANCE.md).
TEST(SamplerTest, PollsAtTheMetersPeriodAndStopsCleanly) {
  FakeMeter meter(/*update_period_ns=*/500'000);  // a fast meter: 2 kHz
  std::mutex mu;
  std::vector<EnergySample> got;
  Sampler sampler(&meter, [&](EnergySample s) {
    std::lock_guard<std::mutex> lock(mu);
    got.push_back(std::move(s));
  });
  EXPECT_EQ(sampler.period_ns(), 500'000);
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_FALSE(sampler.Start().ok());
  usleep(100'000);
  ASSERT_TRUE(sampler.Stop().ok());
  EXPECT_FALSE(sampler.running());
  SamplerStats s = sampler.stats();
  EXPECT_GT(s.reads, 2) << "the thread polled: a first reading, at least one in between, and the last at Stop";
  EXPECT_GT(s.wall_ns, 0);
  int64_t reads_at_stop = meter.reads.load();
  usleep(20'000);
  EXPECT_EQ(meter.reads.load(), reads_at_stop);  // the thread is gone
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(static_cast<int64_t>(got.size()), s.samples_emitted);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_LE(got[i - 1].t_ns, got[i].t_ns);
  EXPECT_EQ(got.front().meter, "fake");
  EXPECT_EQ(got.front().provenance, Provenance::kMeasured);
}

// The thread's own CPU time is measured (it goes into meta.energy.sampler).
TEST(SamplerTest, MeasuresItsOwnCpuCost) {
  FakeMeter meter(/*update_period_ns=*/1'000'000);
  int64_t sunk = 0;
  Sampler sampler(&meter, [&](EnergySample) { ++sunk; });
  EXPECT_EQ(sampler.period_ns(), 1'000'000);
  ASSERT_TRUE(sampler.Start().ok());
  usleep(100'000);
  ASSERT_TRUE(sampler.Stop().ok());
  SamplerStats s = sampler.stats();
  EXPECT_GT(s.thread_cpu_ns, 0);
  EXPECT_LT(s.thread_cpu_ns, s.wall_ns) << "one thread cannot use more CPU than wall time";
  EXPECT_GT(s.cpu_fraction(), 0);
  EXPECT_LT(s.cpu_fraction(), 1);
}

// The real estimate meter changes on every read, so every read is emitted.
TEST(SamplerTest, EstimateMeterEmitsEveryChangedReading) {
  auto meter = OpenEstimateMeter();
  ASSERT_TRUE(meter.ok());
  int64_t sunk = 0;
  Sampler sampler(meter->get(), [&](EnergySample) { ++sunk; });
  EXPECT_EQ(sampler.period_ns(), (*meter)->update_period_ns());
  ASSERT_TRUE(sampler.Start().ok());
  usleep(100'000);
  ASSERT_TRUE(sampler.Stop().ok());
  SamplerStats s = sampler.stats();
  EXPECT_GT(s.reads, 2);
  EXPECT_EQ(s.read_errors, 0);
  EXPECT_EQ(sunk, s.samples_emitted);
  EXPECT_GE(s.samples_emitted, s.reads - 1) << "only a reading equal to the one before may be dropped";
}

TEST(SamplerTest, BacksOffWhenTheMeterIsSlowerThanItClaims) {
  FakeMeter meter(/*update_period_ns=*/1'000'000, /*change_every_ns=*/40'000'000);
  int64_t sunk = 0;
  Sampler sampler(&meter, [&](EnergySample) { ++sunk; });
  ASSERT_TRUE(sampler.Start().ok());
  usleep(400'000);
  ASSERT_TRUE(sampler.Stop().ok());
  SamplerStats s = sampler.stats();
  EXPECT_LT(s.reads, 300) << "400 ms at 1 kHz would be 400 reads";
  // Only changes are emitted (plus the first and last reading).
  EXPECT_LE(s.samples_emitted, 2 + 400 / 40 + 2);
  EXPECT_EQ(sunk, s.samples_emitted);
}

TEST(SamplerTest, PeriodNeverExceedsTheWrapBound) {
  FakeMeter meter(/*update_period_ns=*/100'000'000, 0, /*max_poll_ns=*/2'000'000);
  Sampler sampler(&meter, [](EnergySample) {});
  EXPECT_EQ(sampler.period_ns(), 2'000'000);
}

TEST(SamplerTest, ReadErrorsAreCountedAndKept) {
  FakeMeter meter(1'000'000);
  meter.fail = true;
  Sampler sampler(&meter, [](EnergySample) {});
  ASSERT_TRUE(sampler.Start().ok());
  usleep(20'000);
  ASSERT_TRUE(sampler.Stop().ok());
  EXPECT_GT(sampler.stats().read_errors, 0);
  EXPECT_EQ(sampler.stats().reads, 0);
  EXPECT_EQ(sampler.last_error().message(), "fake meter broke");
}

TEST(SamplerTest, DestructorStopsARunningSampler) {
  FakeMeter meter(1'000'000);
  {
    Sampler sampler(&meter, [](EnergySample) {});
    ASSERT_TRUE(sampler.Start().ok());
    usleep(5'000);
  }
  int64_t reads = meter.reads.load();
  usleep(10'000);
  EXPECT_EQ(meter.reads.load(), reads);
}

}  // namespace
}  // namespace magneton::energy
