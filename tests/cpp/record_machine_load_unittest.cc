// The machine's load over a recording (record/machine_load.h): /proc/stat
// parsing, the share arithmetic, and the meta a real recording writes.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "base/clock.h"
#include "record/descendants_cpu.h"
#include "record/machine_load.h"

#include <sys/wait.h>
#include <unistd.h>
#include "test_util.h"

namespace magneton::record {
namespace {

// A 4.x+ kernel's line: user nice system idle iowait irq softirq steal guest guest_nice.
constexpr char kStat[] =
    "cpu  1000 10 200 5000 40 5 15 30 70 0\n"
    "cpu0 500 5 100 2500 20 2 7 15 35 0\n"
    "intr 123\n";

TEST(MachineLoad, ParsesTheAllCpuLine) {
  auto t = ParseProcStat(kStat);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->busy, 1000u + 10 + 200 + 5 + 15);  // guest (70) is inside user already
  EXPECT_EQ(t->steal, 30u);
  EXPECT_EQ(t->total, t->busy + 5000 + 40 + 30);
}

TEST(MachineLoad, AnOldKernelWithoutStealCountsNone) {
  auto t = ParseProcStat("cpu  1 2 3 4 5 6 7\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->steal, 0u);
  EXPECT_EQ(t->total, 28u);
}

TEST(MachineLoad, TextWithoutTheCpuLineIsAnError) {
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5 6 7\n").ok());
  EXPECT_FALSE(ParseProcStat("cpu  1 2 3\n").ok());
  EXPECT_FALSE(ParseProcStat("").ok());
}

TEST(MachineLoad, OthersAreTheBusyTimeThisProcessDidNotUse) {
  // 1000 ticks of all CPUs over the span (100 Hz): 600 busy, 50 stolen.
  CpuTicks start{100, 10, 1000}, end{700, 60, 2000};
  // This process used 2 s = 200 ticks of it.
  auto load = LoadBetween(start, end, 2'000'000'000, 100);
  ASSERT_TRUE(load.ok());
  EXPECT_NEAR(load->others_cpu_share, 0.4, 1e-12);
  EXPECT_NEAR(load->steal_share, 0.05, 1e-12);
  // Sampled ticks can count less than the process's exact CPU time: never below 0.
  auto quiet = LoadBetween(start, end, 9'000'000'000, 100);
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(quiet->others_cpu_share, 0);
}

TEST(MachineLoad, ASpanTooShortToMeasureIsAnError) {
  CpuTicks start{100, 0, 1000}, end{103, 0, 1005};
  EXPECT_FALSE(LoadBetween(start, end, 0, 100).ok());
  EXPECT_FALSE(LoadBetween(end, start, 0, 100).ok());  // a counter that went back
}

TEST(MachineLoad, ARecordingWritesItsLoad) {
  // A real Recorder on this machine's /proc/stat, spinning until this thread
  // has used 300 ms of CPU: then the span lasts at least that long (ticks to
  // count) and the process's own CPU grew by at least that much, however
  // busy the machine. Spinning for 300 ms of wall time got 196 ms of CPU
  // under ctest -j2 on two cores, and the check on own CPU below failed.
  const std::string path = testing::TempPath("machine_load.mtrace");
  RecorderOptions options;
  options.sample_energy = false;
  ASSERT_TRUE(Recorder::Start(path, {}, options).ok());
  volatile double x = 0;
  for (const int64_t until_ns = ThreadCpuNowNs() + 300'000'000; ThreadCpuNowNs() < until_ns;) {
    x = x + 1;
  }
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const auto& extra = trace->meta.extra;
  ASSERT_EQ(extra.count("machine.load_error"), 0u) << extra.at("machine.load_error");
  ASSERT_EQ(extra.count("machine.others_cpu_share"), 1u);
  const double others = std::stod(extra.at("machine.others_cpu_share"));
  EXPECT_GE(others, 0);
  EXPECT_LE(others, 1);
  EXPECT_GT(std::stod(extra.at("machine.load_seconds")), 0.2);
  // The CPUs the process may use: what bounds how a busy neighbour stalls
  // an op whose threads wait for one another.
  ASSERT_EQ(extra.count("machine.cpus"), 1u);
  EXPECT_EQ(std::stoi(extra.at("machine.cpus")), record::UsableCpuCount());
  EXPECT_GE(record::UsableCpuCount(), 1);
  // The series sampled through it (every 100 ms, plus the first and the
  // last), which the diff takes the job's load from.
  ASSERT_EQ(extra.count("machine.load_samples"), 1u);
  auto series = DecodeLoadSeries(extra.at("machine.load_samples"));
  ASSERT_TRUE(series.ok()) << series.status().message();
  EXPECT_GE(series->samples.size(), 3u);
  for (size_t i = 1; i < series->samples.size(); ++i) {
    EXPECT_GE(series->samples[i].t_ns, series->samples[i - 1].t_ns);
    EXPECT_GE(series->samples[i].total, series->samples[i - 1].total);
  }
  // This process spun the whole time: its own CPU time is in the series.
  EXPECT_GT(series->samples.back().own_cpu_ns - series->samples.front().own_cpu_ns, 200'000'000);
}

TEST(MachineLoad, TheSamplerKeepsItsSeriesBounded) {
  auto sampler = LoadSampler::Start(1'000'000);  // every 1 ms
  ASSERT_TRUE(sampler.ok()) << sampler.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const LoadSeries series = (*sampler)->Stop();
  EXPECT_GE(series.samples.size(), 10u);
  EXPECT_LE(series.samples.size(), LoadSampler::kMaxLoadSamples);
  EXPECT_GT(series.ticks_per_second, 0);
}

TEST(MachineLoad, AnUnreadableProcStatIsSaidInTheTrace) {
  const std::string path = testing::TempPath("machine_load_error.mtrace");
  setenv("MAGNETON_PROC_ROOT", "/nonexistent-magneton-root", 1);
  RecorderOptions options;
  options.sample_energy = false;
  const Status started = Recorder::Start(path, {}, options);
  unsetenv("MAGNETON_PROC_ROOT");
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(trace->meta.extra.count("machine.load_error"), 1u);
  EXPECT_NE(trace->meta.extra.at("machine.load_error").find("/proc/stat"), std::string::npos);
  EXPECT_EQ(trace->meta.extra.count("machine.others_cpu_share"), 0u);
}

}  // namespace
}  // namespace magneton::record

// The job's descendants (record/descendants_cpu.h): torch.compile's compile
// workers count as the job's CPU, not as other processes' load.
namespace magneton::record {
namespace {

TEST(DescendantsCpu, ReadsTheFourTimesAfterTheCommand) {
  // pid (comm with ") (" inside) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime ...
  const std::string line = "4242 (cc1plus (x) y) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 20 0 1\n";
  EXPECT_EQ(ProcStatTreeTicks(line), 11 + 12 + 13 + 14);
  EXPECT_EQ(ProcStatTreeTicks("4242 (short) R 1 2"), -1);
  EXPECT_EQ(ProcStatTreeTicks("no parenthesis"), -1);
}

TEST(DescendantsCpu, CountsAChildThatBurnsCpu) {
  const int64_t before = DescendantsCpuNs();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Spins until it has used 0.3 s of CPU, not of wall time: on a loaded
    // machine 0.3 s of wall time can be far less CPU (this failed so).
    volatile uint64_t x = 0;
    timespec cpu{};
    do {
      for (int i = 0; i < 10000; ++i) x = x + 1;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    } while (cpu.tv_sec * 1'000'000'000LL + cpu.tv_nsec < 300'000'000LL);
    _exit(0);
  }
  // While it runs it is a live descendant; once waited for, RUSAGE_CHILDREN has it.
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  // rusage splits user and system time by ticks: allow one sixth for that.
  EXPECT_GE(DescendantsCpuNs() - before, 250'000'000);
}

}  // namespace
}  // namespace magneton::record
