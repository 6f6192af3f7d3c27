#include "record/descendants_cpu.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include "energy/sysfs.h"

namespace magneton::record {
namespace {

// The child pids of every thread of `pid` (/proc/<pid>/task/<tid>/children).
std::vector<long> ChildrenOf(const std::string& pid) {
  std::vector<long> out;
  const std::string tasks = "/proc/" + pid + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    auto text = energy::ReadSmallFile(tasks + "/" + e->d_name + "/children");
    if (!text.ok()) continue;
    std::istringstream in(*text);
    for (long child; in >> child;) out.push_back(child);
  }
  closedir(dir);
  return out;
}

}  // namespace

int64_t ProcStatTreeTicks(const std::string& stat_line) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the
  // fields after the last ')' are numbered from 3 (state).
  const size_t close = stat_line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat_line.substr(close + 1));
  std::vector<std::string> f;
  for (std::string x; in >> x && f.size() < 15;) f.push_back(x);
  if (f.size() < 15) return -1;
  // fields 14..17 (utime stime cutime cstime) are f[11..14].
  int64_t ticks = 0;
  for (size_t i = 11; i <= 14; ++i) {
    char* end = nullptr;
    const long long v = std::strtoll(f[i].c_str(), &end, 10);
    if (end == f[i].c_str() || v < 0) return -1;
    ticks += v;
  }
  return ticks;
}

int64_t DescendantsCpuNs() {
  rusage ru{};
  int64_t ns = 0;
  if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
    ns += (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1'000'000'000LL +
          (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1'000LL;
  }
  const long hz = sysconf(_SC_CLK_TCK);
  std::vector<long> pending = ChildrenOf("self");
  int64_t ticks = 0;
  for (size_t i = 0; i < pending.size() && i < 4096; ++i) {
    const std::string pid = std::to_string(pending[i]);
    auto stat = energy::ReadSmallFile("/proc/" + pid + "/stat");
    if (!stat.ok()) continue;  // exited since: its parent's cutime (or ours) has it now
    const int64_t t = ProcStatTreeTicks(*stat);
    if (t > 0) ticks += t;
    for (long child : ChildrenOf(pid)) pending.push_back(child);
  }
  if (hz > 0) ns += ticks * (1'000'000'000LL / hz);
  return ns;
}

}  // namespace magneton::record
