// The sampler thread against fake meters. Its schedule is checked on a
// scripted clock (fake_clock.h): every read time and every sample is exact,
// whatever the load on this machine. Rates and CPU shares on the real clock
// are bench/sampler's job (docs/PERFORMANCE.md), never asserted here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "base/clock.h"
#include "energy/energy.h"
#include "energy/sampler.h"
#include "fake_clock.h"

namespace magneton::energy {
namespace {

constexpr int64_t kMs = 1'000'000;

// A counter with the update period it claims. Its value advances on every
// read, or every `change_every_ns` of the clock's time when that is set. One
// read (`slow_read`, counted from 0) can take `slow_read_ns` of clock time.
class FakeMeter : public Meter {
 public:
  struct Options {
    int64_t update_period_ns = kMs;
    int64_t change_every_ns = 0;
    int64_t max_poll_ns = INT64_MAX;
    int64_t slow_read = -1;
    int64_t slow_read_ns = 0;
  };
  FakeMeter(Clock* clock, Options o) : clock_(clock), o_(o) {}
  std::string_view name() const override { return "fake"; }
  const std::vector<MeterDomain>& domains() const override { return domains_; }
  MeterKind kind() const override { return MeterKind::kEnergyCounter; }
  int64_t update_period_ns() const override { return o_.update_period_ns; }
  int64_t max_poll_period_ns() const override { return o_.max_poll_ns; }
  Provenance provenance() const override { return Provenance::kMeasured; }
  StatusOr<MeterReading> Read() override {
    const int64_t n = reads.fetch_add(1);
    if (fail) return Unavailable("fake meter broke");
    MeterReading r;
    r.t_ns = clock_->MonotonicNowNs();
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_times_.push_back(r.t_ns);
    }
    if (n == o_.slow_read) {
      auto* fake = dynamic_cast<FakeClock*>(clock_);
      if (fake) fake->Advance(o_.slow_read_ns);
    }
    double e = o_.change_every_ns > 0 ? static_cast<double>(r.t_ns / o_.change_every_ns) : static_cast<double>(n);
    r.domains.push_back({e, kNaN});
    return r;
  }
  std::vector<int64_t> read_times() {
    std::lock_guard<std::mutex> lock(mu_);
    return read_times_;
  }
  std::atomic<int64_t> reads{0};
  std::atomic<bool> fail{false};

 private:
  Clock* clock_;
  Options o_;
  std::mutex mu_;
  std::vector<int64_t> read_times_;
  std::vector<MeterDomain> domains_ = {{"fake-0", true}};
};

// Collects what the sampler thread emits.
struct Collected {
  std::mutex mu;
  std::vector<EnergySample> samples;
  Sampler::Sink sink() {
    return [this](EnergySample s) {
      std::lock_guard<std::mutex> lock(mu);
      samples.push_back(std::move(s));
    };
  }
  std::vector<EnergySample> get() {
    std::lock_guard<std::mutex> lock(mu);
    return samples;
  }
};

// Appends `n` times, each `gap` after the last.
void Steps(std::vector<int64_t>* out, int64_t gap, int n) {
  for (int i = 0; i < n; ++i) out->push_back(out->back() + gap);
}

std::vector<int64_t> Offsets(const std::vector<int64_t>& times, int64_t t0) {
  std::vector<int64_t> out;
  for (int64_t t : times) out.push_back(t - t0);
  return out;
}

std::vector<int64_t> SampleOffsets(const std::vector<EnergySample>& samples, int64_t t0) {
  std::vector<int64_t> out;
  for (const EnergySample& s : samples) out.push_back(s.t_ns - t0);
  return out;
}

TEST(SamplerTest, PollsAtTheMetersPeriodAndStopsCleanly) {
  FakeClock clock;
  const int64_t t0 = clock.MonotonicNowNs();
  FakeMeter meter(&clock, {.update_period_ns = kMs / 2});  // a fast meter: 2 kHz, changing on every read
  Collected got;
  Sampler sampler(&meter, got.sink(), {.clock = &clock});
  EXPECT_EQ(sampler.period_ns(), kMs / 2);
  clock.ParkAfter(t0 + 10 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  EXPECT_FALSE(sampler.Start().ok());
  clock.WaitParked();

  std::vector<int64_t> want = {0};
  Steps(&want, kMs / 2, 20);  // every 0.5 ms up to 10 ms
  EXPECT_EQ(Offsets(meter.read_times(), t0), want);
  std::vector<int64_t> slept(want.begin() + 1, want.end());
  EXPECT_EQ(Offsets(clock.deadlines(), t0), slept) << "absolute deadlines, one period apart";
  EXPECT_EQ(SampleOffsets(got.get(), t0), want) << "every reading changed, so every one is emitted";

  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
  EXPECT_FALSE(sampler.running());
  const int64_t reads_at_stop = meter.reads.load();
  usleep(10'000);
  EXPECT_EQ(meter.reads.load(), reads_at_stop) << "the thread is gone";
  const SamplerStats s = sampler.stats();
  const std::vector<EnergySample> samples = got.get();
  EXPECT_EQ(s.reads, reads_at_stop);
  EXPECT_EQ(static_cast<int64_t>(samples.size()), s.samples_emitted);
  for (size_t i = 1; i < samples.size(); ++i) EXPECT_LE(samples[i - 1].t_ns, samples[i].t_ns);
  // The window is Start to the final reading taken at Stop.
  EXPECT_EQ(samples.front().t_ns, t0);
  EXPECT_EQ(s.wall_ns, samples.back().t_ns - t0);
  EXPECT_EQ(samples.front().meter, "fake");
  EXPECT_EQ(samples.front().provenance, Provenance::kMeasured);
}

// The thread's own CPU time (it goes into meta.energy.sampler) is read on
// the sampler thread: the fake charges CPU only to the thread that sleeps.
TEST(SamplerTest, MeasuresItsOwnCpuCost) {
  FakeClock clock;
  const int64_t t0 = clock.MonotonicNowNs();
  clock.set_cpu_per_wake_ns(7'000);
  FakeMeter meter(&clock, {.update_period_ns = kMs});
  Collected got;
  Sampler sampler(&meter, got.sink(), {.clock = &clock});
  clock.ParkAfter(t0 + 5 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  clock.WaitParked();
  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
  const SamplerStats s = sampler.stats();
  EXPECT_EQ(clock.ThreadCpuNowNs(), 0) << "this thread never slept on the clock";
  EXPECT_GE(clock.sleeper_cpu_ns(), 6 * 7'000) << "woke at 1..5 ms and once more to park";
  EXPECT_EQ(s.thread_cpu_ns, clock.sleeper_cpu_ns());
  EXPECT_EQ(s.wall_ns, got.get().back().t_ns - t0);
  EXPECT_DOUBLE_EQ(s.cpu_fraction(), static_cast<double>(s.thread_cpu_ns) / static_cast<double>(s.wall_ns));
  EXPECT_DOUBLE_EQ(s.reads_per_second(), static_cast<double>(s.reads) * 1e9 / static_cast<double>(s.wall_ns));
}

// The real estimate meter on the same clock changes on every read (its idle
// share grows with wall time), so every read is emitted, with the model's value.
TEST(SamplerTest, EstimateMeterEmitsEveryChangedReading) {
  FakeClock clock;
  const int64_t t0 = clock.MonotonicNowNs();
  EstimateOptions options;
  options.model = EstimateModel{};
  options.model.idle_package_w = 2;
  options.use_perf_counters = false;
  options.clock = &clock;
  auto meter = OpenEstimateMeter(options);
  ASSERT_TRUE(meter.ok());
  Collected got;
  Sampler sampler(meter->get(), got.sink(), {.clock = &clock});
  EXPECT_EQ(sampler.period_ns(), (*meter)->update_period_ns());
  EXPECT_EQ(sampler.period_ns(), 5 * kMs);
  clock.ParkAfter(t0 + 50 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  clock.WaitParked();
  const std::vector<EnergySample> samples = got.get();
  ASSERT_EQ(samples.size(), 11u) << "0, 5, ..., 50 ms";
  for (size_t k = 0; k < samples.size(); ++k) {
    EXPECT_EQ(samples[k].t_ns, t0 + static_cast<int64_t>(k) * 5 * kMs);
    // 2 W over k · 5 ms = k · 10 mJ; no process CPU time passed.
    EXPECT_DOUBLE_EQ(samples[k].energy_uj, static_cast<double>(k) * 10'000) << k;
    EXPECT_EQ(samples[k].provenance, Provenance::kEstimated);
  }
  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
  const SamplerStats s = sampler.stats();
  EXPECT_EQ(s.read_errors, 0);
  EXPECT_EQ(static_cast<int64_t>(got.get().size()), s.samples_emitted);
  EXPECT_GE(s.samples_emitted, s.reads - 1) << "only a reading equal to the one before may be dropped";
}

// A meter that claims 1 kHz but changes every 200 ms: after 8 unchanged reads
// the period doubles (1, 2, 4 ms), up to 8 ms (max_backoff x), and the first
// change returns it to 1 ms. 52 reads in 210 ms instead of 211.
TEST(SamplerTest, BacksOffWhenTheMeterIsSlowerThanItClaims) {
  FakeClock clock(/*start_ns=*/10'000 * kMs);  // a multiple of 200 ms: the value changes at offset 200
  const int64_t t0 = clock.MonotonicNowNs();
  FakeMeter meter(&clock, {.update_period_ns = kMs, .change_every_ns = 200 * kMs});
  Collected got;
  Sampler sampler(&meter, got.sink(), {.clock = &clock});
  clock.ParkAfter(t0 + 210 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  clock.WaitParked();

  std::vector<int64_t> want = {0};
  Steps(&want, 1 * kMs, 8);   // 1..8
  Steps(&want, 2 * kMs, 8);   // 10..24
  Steps(&want, 4 * kMs, 8);   // 28..56
  Steps(&want, 8 * kMs, 18);  // 64..200: 8 ms, not 16 after the next 8 unchanged reads
  Steps(&want, 1 * kMs, 8);   // the change seen at 200: back to the base rate, 201..208
  Steps(&want, 2 * kMs, 1);   // 210
  ASSERT_EQ(want.back(), 210 * kMs);
  EXPECT_EQ(want.size(), 52u);
  EXPECT_EQ(Offsets(meter.read_times(), t0), want);
  // Only the first reading and the change are emitted.
  EXPECT_EQ(SampleOffsets(got.get(), t0), (std::vector<int64_t>{0, 200 * kMs}));

  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
  EXPECT_EQ(static_cast<int64_t>(got.get().size()), sampler.stats().samples_emitted);
}

// Back-off never stretches the period past the meter's wrap bound.
TEST(SamplerTest, BackOffStopsAtTheWrapBound) {
  FakeClock clock;
  const int64_t t0 = clock.MonotonicNowNs();
  FakeMeter meter(&clock, {.update_period_ns = kMs, .change_every_ns = 1'000'000 * kMs, .max_poll_ns = 3 * kMs});
  Collected got;
  Sampler sampler(&meter, got.sink(), {.clock = &clock});
  EXPECT_EQ(sampler.period_ns(), kMs);
  clock.ParkAfter(t0 + 60 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  clock.WaitParked();
  std::vector<int64_t> want = {0};
  Steps(&want, 1 * kMs, 8);   // 1..8
  Steps(&want, 2 * kMs, 8);   // 10..24
  Steps(&want, 3 * kMs, 12);  // 27..60: 4 ms would exceed the 3 ms bound
  EXPECT_EQ(Offsets(meter.read_times(), t0), want);
  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
}

// A read that took 20 ms (the thread was preempted) is followed by one
// reading at once and then the base rate: no burst of catch-up reads.
TEST(SamplerTest, FallingBehindDoesNotBurst) {
  FakeClock clock;
  const int64_t t0 = clock.MonotonicNowNs();
  FakeMeter meter(&clock, {.update_period_ns = kMs, .slow_read = 1, .slow_read_ns = 20 * kMs});
  Collected got;
  Sampler sampler(&meter, got.sink(), {.clock = &clock});
  clock.ParkAfter(t0 + 25 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  clock.WaitParked();
  EXPECT_EQ(Offsets(meter.read_times(), t0),
            (std::vector<int64_t>{0, 1 * kMs, 21 * kMs, 22 * kMs, 23 * kMs, 24 * kMs, 25 * kMs}));
  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
}

TEST(SamplerTest, PeriodNeverExceedsTheWrapBound) {
  FakeClock clock;
  FakeMeter meter(&clock, {.update_period_ns = 100 * kMs, .max_poll_ns = 2 * kMs});
  Sampler sampler(&meter, [](EnergySample) {});
  EXPECT_EQ(sampler.period_ns(), 2 * kMs);
}

TEST(SamplerTest, ReadErrorsAreCountedAndKept) {
  FakeClock clock;
  const int64_t t0 = clock.MonotonicNowNs();
  FakeMeter meter(&clock, {.update_period_ns = kMs});
  meter.fail = true;
  Sampler sampler(&meter, [](EnergySample) {}, {.clock = &clock});
  clock.ParkAfter(t0 + 3 * kMs);
  ASSERT_TRUE(sampler.Start().ok());
  clock.WaitParked();
  EXPECT_EQ(sampler.stats().read_errors, 4) << "at 0, 1, 2, 3 ms";
  EXPECT_EQ(sampler.stats().reads, 0);
  clock.Release();
  ASSERT_TRUE(sampler.Stop().ok());
  EXPECT_EQ(sampler.stats().read_errors, meter.reads.load());
  EXPECT_EQ(sampler.last_error().message(), "fake meter broke");
}

// Without a clock in the options the sampler runs on the system clock.
TEST(SamplerTest, DefaultsToTheSystemClock) {
  FakeMeter meter(&SystemClock(), {.update_period_ns = kMs});
  Collected got;
  Sampler sampler(&meter, got.sink());
  const int64_t before = MonotonicNowNs();
  ASSERT_TRUE(sampler.Start().ok());
  usleep(5'000);
  ASSERT_TRUE(sampler.Stop().ok());
  const int64_t after = MonotonicNowNs();
  const std::vector<EnergySample> samples = got.get();
  ASSERT_GE(samples.size(), 2u) << "the reading at Start and the one at Stop";
  EXPECT_GE(samples.front().t_ns, before);
  EXPECT_LE(samples.back().t_ns, after);
  const SamplerStats s = sampler.stats();
  EXPECT_GT(s.wall_ns, 0);
  EXPECT_LE(s.wall_ns, after - before);
}

TEST(SamplerTest, DestructorStopsARunningSampler) {
  FakeMeter meter(&SystemClock(), {.update_period_ns = kMs});
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
