// How busy the machine was with other work while a recording ran: other
// processes' CPU time and the hypervisor's steal, as shares of all the
// machine's CPU time over the recording. Estimated energy is a model of wall
// and CPU time, and measured energy is slowed just as much, so a recording
// made beside a busy neighbour looks costlier for a reason outside the
// program: the diff needs to know (detect/uncertainty.cc).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "magneton/status.h"
#include "trace/load_samples.h"

namespace magneton::record {

// The all-CPU line of /proc/stat, in clock ticks (USER_HZ).
struct CpuTicks {
  uint64_t busy = 0;   // user + nice + system + irq + softirq (guest time is inside user)
  uint64_t steal = 0;  // taken by the hypervisor for other guests
  uint64_t total = 0;  // every field but guest and guest_nice (counted in user and nice already)
};

// Parses the "cpu " line of /proc/stat text. Kernels before 2.6.11 lack the
// steal field; it counts as 0 then.
StatusOr<CpuTicks> ParseProcStat(const std::string& text);

// Reads $MAGNETON_PROC_ROOT/proc/stat ("" root: the real one).
StatusOr<CpuTicks> ReadCpuTicks();

struct MachineLoad {
  double others_cpu_share = 0;  // other processes' busy time / all CPU time, in [0, 1]
  double steal_share = 0;       // steal / all CPU time, in [0, 1]
  double seconds = 0;           // the span measured
  // CPUs this process may run on (its affinity mask): how many threads of
  // one op can run at once, which sets how much a busy neighbour can stall
  // an op whose threads wait for one another (detect::LoadSlowdownBound).
  int cpus = 0;
};

// The CPUs the calling process may run on (sched_getaffinity), else the
// CPUs online; at least 1.
int UsableCpuCount();

// The load between two readings, given how much CPU time this process used
// in between. Fails when the span is too short to say anything (under
// 10 ticks of all CPUs together).
StatusOr<MachineLoad> LoadBetween(const CpuTicks& start, const CpuTicks& end, int64_t own_cpu_ns,
                                  long ticks_per_second);

// Samples the load through a recording, every `period_ns` on a thread of
// its own (a read of /proc/stat, ~20 us), so that the diff can take the load
// over the job alone (trace/load_samples.h). The series is thinned to
// kMaxLoadSamples: memory does not grow with the run.
class LoadSampler {
 public:
  static constexpr int64_t kDefaultPeriodNs = 100'000'000;
  static constexpr size_t kMaxLoadSamples = 4096;
  // Takes the first sample now; fails when /proc/stat cannot be read.
  static StatusOr<std::unique_ptr<LoadSampler>> Start(int64_t period_ns = kDefaultPeriodNs);
  ~LoadSampler();
  // Takes the last sample and stops the thread; the series, in time order.
  LoadSeries Stop();

 private:
  LoadSampler() = default;
  void Run(int64_t period_ns);
  Status SampleNow();

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  LoadSeries series_;
  std::thread thread_;
};

// The meta rows a recording keeps: machine.others_cpu_share,
// machine.steal_share, machine.load_seconds, machine.cpus (docs/TRACE_FORMAT.md; the diff
// reads them in detect/regions.cc).
std::map<std::string, std::string> LoadMeta(const MachineLoad& load);

}  // namespace magneton::record
