#include "record/machine_load.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

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
  if (ticks_per_second <= 0) return InvalidArgument("clock ticks per second must be positive");
  if (end.total < start.total + 10 || end.busy < start.busy || end.steal < start.steal) {
    return FailedPrecondition("the recording was too short to measure the machine's load");
  }
  const double total = static_cast<double>(end.total - start.total);
  const double own_ticks = static_cast<double>(own_cpu_ns) * 1e-9 * static_cast<double>(ticks_per_second);
  MachineLoad load;
  // Ticks are sampled by the kernel, so this process's exact CPU time can
  // exceed the busy ticks counted over a short span: clamp at 0.
  load.others_cpu_share = std::clamp((static_cast<double>(end.busy - start.busy) - own_ticks) / total, 0.0, 1.0);
  load.steal_share = std::clamp(static_cast<double>(end.steal - start.steal) / total, 0.0, 1.0);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  load.seconds = total / static_cast<double>(ticks_per_second) / static_cast<double>(std::max(1L, cpus));
  return load;
}

std::map<std::string, std::string> LoadMeta(const MachineLoad& load) {
  return {{"machine.others_cpu_share", fmt::format("{:.4f}", load.others_cpu_share)},
          {"machine.steal_share", fmt::format("{:.4f}", load.steal_share)},
          {"machine.load_seconds", fmt::format("{:.3f}", load.seconds)}};
}

}  // namespace magneton::record
