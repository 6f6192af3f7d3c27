#include "record/machine_load.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "base/clock.h"
#include "record/descendants_cpu.h"
#include "energy/sysfs.h"
#include <fmt/format.h>

namespace magneton::record {

StatusOr<CpuTicks> ParseProcStat(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    std::vector<uint64_t> v;
    for (uint64_t x; fields >> x;) v.push_back(x);
    // user nice system idle iowait irq softirq [steal [guest [guest_nice]]]
    if (v.size() < 7) return InvalidArgument("/proc/stat: the cpu line has " + std::to_string(v.size()) +
                                             " fields, expected at least 7");
    CpuTicks t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6];
    t.steal = v.size() > 7 ? v[7] : 0;
    t.total = t.busy + v[3] + v[4] + t.steal;
    return t;
  }
  return InvalidArgument("/proc/stat: no all-CPU \"cpu \" line");
}

StatusOr<CpuTicks> ReadCpuTicks() {
  const char* root = std::getenv("MAGNETON_PROC_ROOT");
  MAGNETON_ASSIGN_OR_RETURN(std::string text, energy::ReadSmallFile(std::string(root ? root : "") + "/proc/stat"));
  return ParseProcStat(text);
}

StatusOr<MachineLoad> LoadBetween(const CpuTicks& start, const CpuTicks& end, int64_t own_cpu_ns,
                                  long ticks_per_second) {
  const LoadSample from{0, start.busy, start.steal, start.total, 0};
  const LoadSample to{0, end.busy, end.steal, end.total, own_cpu_ns};
  auto shares = LoadSharesBetween(from, to, ticks_per_second);
  if (!shares.ok()) {
    if (shares.status().code() == StatusCode::kFailedPrecondition) {
      return FailedPrecondition("the recording was too short to measure the machine's load");
    }
    return shares.status();
  }
  MachineLoad load;
  load.others_cpu_share = shares->others_cpu_share;
  load.steal_share = shares->steal_share;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  load.seconds = static_cast<double>(shares->total_ticks) / static_cast<double>(ticks_per_second) /
                 static_cast<double>(std::max(1L, cpus));
  return load;
}

StatusOr<std::unique_ptr<LoadSampler>> LoadSampler::Start(int64_t period_ns) {
  std::unique_ptr<LoadSampler> sampler(new LoadSampler());
  sampler->series_.ticks_per_second = sysconf(_SC_CLK_TCK);
  MAGNETON_RETURN_IF_ERROR(sampler->SampleNow());
  sampler->thread_ = std::thread([s = sampler.get(), period_ns] { s->Run(period_ns); });
  return sampler;
}

LoadSampler::~LoadSampler() {
  if (thread_.joinable()) Stop();
}

Status LoadSampler::SampleNow() {
  MAGNETON_ASSIGN_OR_RETURN(CpuTicks ticks, ReadCpuTicks());
  // The job's CPU includes the processes it started (compile workers and the
  // compilers they run under torch.compile): not "other processes".
  LoadSample s{MonotonicNowNs(), ticks.busy, ticks.steal, ticks.total, ProcessCpuNowNs() + DescendantsCpuNs()};
  std::lock_guard<std::mutex> lock(mu_);
  series_.samples.push_back(s);
  if (series_.samples.size() > kMaxLoadSamples) ThinLoadSeries(series_, kMaxLoadSamples / 2);
  return Status::Ok();
}

void LoadSampler::Run(int64_t period_ns) {
  pthread_setname_np(pthread_self(), "magneton-load");
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, std::chrono::nanoseconds(period_ns), [this] { return stopping_; })) {
    lock.unlock();
    (void)SampleNow();  // a failed read leaves a gap; the enclosing samples still span it
    lock.lock();
  }
}

LoadSeries LoadSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  (void)SampleNow();
  std::lock_guard<std::mutex> lock(mu_);
  return series_;
}

int UsableCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    if (const int n = CPU_COUNT(&set); n > 0) return n;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::map<std::string, std::string> LoadMeta(const MachineLoad& load) {
  std::map<std::string, std::string> meta{{"machine.others_cpu_share", fmt::format("{:.4f}", load.others_cpu_share)},
                                          {"machine.steal_share", fmt::format("{:.4f}", load.steal_share)},
                                          {"machine.load_seconds", fmt::format("{:.3f}", load.seconds)}};
  if (load.cpus > 0) meta.emplace("machine.cpus", std::to_string(load.cpus));
  return meta;
}

}  // namespace magneton::record
