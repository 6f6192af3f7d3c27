// The sampled load series (trace/load_samples.h): its meta encoding, the
// load over a window, and the diff taking the job's load from it
// (detect::MachineLoadOf) rather than the whole recording's.
#include <gtest/gtest.h>

#include <string>

#include "detect/detect.h"
#include "trace/load_samples.h"

namespace magneton {
namespace {

// 100 ticks/s, 2 CPUs: 200 ticks of all CPUs per second. A sample per
// second for 10 s; other work takes a CPU (100 busy ticks a second) only in
// seconds [6, 8); this process uses half a CPU throughout.
LoadSeries BusyInTheMiddle() {
  LoadSeries s;
  s.ticks_per_second = 100;
  uint64_t busy = 0, total = 0;
  int64_t own_ns = 0;
  for (int second = 0; second <= 10; ++second) {
    s.samples.push_back({second * 1'000'000'000LL, busy, 0, total, own_ns});
    busy += 50 + (second >= 6 && second < 8 ? 100 : 0);
    total += 200;
    own_ns += 500'000'000;
  }
  return s;
}

TEST(LoadSamples, EncodeThenDecodeGivesTheSeriesBack) {
  const LoadSeries s = BusyInTheMiddle();
  auto back = DecodeLoadSeries(EncodeLoadSeries(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ticks_per_second, 100);
  ASSERT_EQ(back->samples.size(), s.samples.size());
  for (size_t i = 0; i < s.samples.size(); ++i) {
    EXPECT_EQ(back->samples[i].t_ns, s.samples[i].t_ns);
    EXPECT_EQ(back->samples[i].busy, s.samples[i].busy);
    EXPECT_EQ(back->samples[i].total, s.samples[i].total);
    EXPECT_EQ(back->samples[i].own_cpu_ns, s.samples[i].own_cpu_ns);
  }
}

TEST(LoadSamples, MalformedTextIsAClearError) {
  for (const char* bad : {"", "x;1,2,3,4,5", "100;1,2,3,4", "100;1,2,3,4,5;0,1,2,3,x", "0;1,2,3,4,5",
                          "100;5,2,3,4,5;1,2,3,4,5"}) {
    auto s = DecodeLoadSeries(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_NE(s.status().message().find("machine.load_samples"), std::string::npos);
    }
  }
  EXPECT_TRUE(DecodeLoadSeries("100").ok());  // no samples is a series, too short for any window
}

TEST(LoadSamples, TheWindowsLoadIsWhatRanInsideIt) {
  const LoadSeries s = BusyInTheMiddle();
  auto busy = LoadOver(s, 6'000'000'000LL, 8'000'000'000LL);
  ASSERT_TRUE(busy.ok());
  EXPECT_NEAR(busy->others_cpu_share, 0.5, 1e-12);  // one CPU of two
  auto quiet = LoadOver(s, 1'000'000'000LL, 5'000'000'000LL);
  ASSERT_TRUE(quiet.ok());
  EXPECT_NEAR(quiet->others_cpu_share, 0.0, 1e-12);
  // A window between samples widens to the ones enclosing it: [6.2, 6.7] is [6, 7].
  auto inside = LoadOver(s, 6'200'000'000LL, 6'700'000'000LL);
  ASSERT_TRUE(inside.ok());
  EXPECT_NEAR(inside->others_cpu_share, 0.5, 1e-12);
  EXPECT_EQ(inside->total_ticks, 200u);
  // The whole recording dilutes it: 2 busy seconds of 10.
  auto whole = LoadOver(s, 0, 10'000'000'000LL);
  ASSERT_TRUE(whole.ok());
  EXPECT_NEAR(whole->others_cpu_share, 0.1, 1e-12);
}

TEST(LoadSamples, ASpanWithTooFewTicksSaysSo) {
  LoadSeries s;
  s.ticks_per_second = 100;
  s.samples = {{0, 0, 0, 0, 0}, {1'000'000, 1, 0, 4, 0}};
  EXPECT_FALSE(LoadOver(s, 0, 1'000'000).ok());
  s.samples.resize(1);
  EXPECT_FALSE(LoadOver(s, 0, 1'000'000).ok());
}

TEST(LoadSamples, ThinningKeepsTheEndsAndTheBound) {
  LoadSeries s = BusyInTheMiddle();
  ThinLoadSeries(s, 4);
  ASSERT_LE(s.samples.size(), 4u);
  EXPECT_EQ(s.samples.front().t_ns, 0);
  EXPECT_EQ(s.samples.back().t_ns, 10'000'000'000LL);
  // The whole span's load is what it was.
  auto whole = LoadOver(s, 0, 10'000'000'000LL);
  ASSERT_TRUE(whole.ok());
  EXPECT_NEAR(whole->others_cpu_share, 0.1, 1e-12);
}

TEST(LoadSamples, TheDiffTakesTheJobsLoadWhenTheTraceHoldsTheSeries) {
  RunMetadata meta;
  meta.extra["machine.others_cpu_share"] = "0.1000";  // the whole recording's
  meta.extra["machine.steal_share"] = "0.0000";
  const detect::MachineLoadShares whole = detect::MachineLoadOf(meta, 6'000'000'000LL, 8'000'000'000LL);
  EXPECT_FALSE(whole.over_job);  // no series: the recording's load
  EXPECT_NEAR(whole.others_cpu_share, 0.1, 1e-12);
  meta.extra["machine.load_samples"] = EncodeLoadSeries(BusyInTheMiddle());
  const detect::MachineLoadShares job = detect::MachineLoadOf(meta, 6'000'000'000LL, 8'000'000'000LL);
  EXPECT_TRUE(job.over_job);
  EXPECT_NEAR(job.others_cpu_share, 0.5, 1e-12);
  EXPECT_TRUE(job.over_job_error.empty());
  // A corrupt series falls back to the recording's load rather than failing
  // the diff, and says why.
  meta.extra["machine.load_samples"] = "garbage";
  const detect::MachineLoadShares fallback = detect::MachineLoadOf(meta, 6'000'000'000LL, 8'000'000'000LL);
  EXPECT_FALSE(fallback.over_job);
  EXPECT_NEAR(fallback.others_cpu_share, 0.1, 1e-12);
  EXPECT_NE(fallback.over_job_error.find("machine.load_samples"), std::string::npos) << fallback.over_job_error;
}

}  // namespace
}  // namespace magneton
