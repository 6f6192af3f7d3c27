#include "energy/perf_power_meter.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/clock.h"
#include "energy/sysfs.h"
#include "energy/energy.h"

namespace magneton::energy {
namespace {

// Event name -> domain prefix, and whether it counts toward the total (same
// rule as RAPL: pkg + ram; cores and gpu are inside pkg; psys contains all).
struct EventKind {
  const char* event;
  const char* domain_prefix;
  bool counts_in_total;
  bool system_wide;  // one counter for the machine, not per package
};
constexpr EventKind kEvents[] = {
    {"energy-pkg", "cpu-package-", true, false}, {"energy-ram", "dram-", true, false},
    {"energy-cores", "core-", false, false},     {"energy-gpu", "gpu-integrated-", false, false},
    {"energy-psys", "psys", false, true},
};

class PerfPowerMeter final : public Meter {
 public:
  struct Counter {
    int fd;
    double scale_uj;  // counts -> µJ
  };
  PerfPowerMeter(std::vector<MeterDomain> domains, std::vector<Counter> counters)
      : domains_(std::move(domains)), counters_(std::move(counters)) {}
  ~PerfPowerMeter() override {
    for (auto& c : counters_) ::close(c.fd);
  }
  std::string_view name() const override { return "perf-power"; }
  const std::vector<MeterDomain>& domains() const override { return domains_; }
  MeterKind kind() const override { return MeterKind::kEnergyCounter; }
  int64_t update_period_ns() const override { return 1'000'000; }
  Provenance provenance() const override { return Provenance::kMeasured; }

  StatusOr<MeterReading> Read() override {
    MeterReading reading;
    reading.domains.resize(counters_.size());
    int64_t before = MonotonicNowNs();
    for (size_t i = 0; i < counters_.size(); ++i) {
      uint64_t count = 0;
      if (::read(counters_[i].fd, &count, sizeof count) != sizeof count)
        return Unavailable("reading perf counter for " + domains_[i].name + ": " + std::strerror(errno));
      reading.domains[i].energy_uj = static_cast<double>(count) * counters_[i].scale_uj;
    }
    int64_t after = MonotonicNowNs();
    reading.t_ns = before + (after - before) / 2;
    return reading;
  }

 private:
  std::vector<MeterDomain> domains_;
  std::vector<Counter> counters_;
};

}  // namespace

StatusOr<uint64_t> ParsePerfEventConfig(const std::string& text) {
  std::string t = Trim(text);
  size_t pos = t.find("event=");
  if (pos == std::string::npos) return Corrupt("perf event spec without event=: '" + t + "'");
  std::string value = t.substr(pos + 6);
  value = value.substr(0, value.find(','));
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(value.c_str(), &end, 0);
  if (errno != 0 || end == value.c_str()) return Corrupt("bad perf event value: '" + value + "'");
  return static_cast<uint64_t>(v);
}

StatusOr<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::string t = Trim(text);
  size_t start = 0;
  while (start < t.size()) {
    size_t comma = t.find(',', start);
    std::string part = t.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = part.find('-');
    try {
      int a = std::stoi(part.substr(0, dash));
      int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    } catch (...) {
      return Corrupt("bad cpu list: '" + t + "'");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (cpus.empty()) return Corrupt("empty cpu list");
  return cpus;
}

StatusOr<std::unique_ptr<Meter>> OpenPerfPowerMeter(const PerfPowerOptions& options) {
  std::string pmu = SysfsRoot(options.sysfs_root) + "/sys/bus/event_source/devices/power";
  auto type_text = ReadSmallFile(pmu + "/type");
  if (!type_text.ok())
    return Unavailable("no 'power' PMU (" + pmu + "/type missing): the kernel exposes no RAPL perf events "
                       "here (no perf RAPL support for this CPU, or a VM)" + VirtualMachineHint());
  MAGNETON_ASSIGN_OR_RETURN(uint64_t type, ParseUint(*type_text, pmu + "/type"));
  std::vector<int> cpus = {0};
  if (auto mask = ReadSmallFile(pmu + "/cpumask"); mask.ok()) {
    MAGNETON_ASSIGN_OR_RETURN(cpus, ParseCpuList(*mask));
  }

  std::vector<MeterDomain> domains;
  std::vector<PerfPowerMeter::Counter> counters;
  auto close_all = [&counters] {
    for (auto& c : counters) ::close(c.fd);
  };
  Status first_error;
  for (const EventKind& kind : kEvents) {
    std::string base = pmu + "/events/" + kind.event;
    auto spec = ReadSmallFile(base);
    if (!spec.ok()) continue;  // this CPU lacks the domain
    auto config = ParsePerfEventConfig(*spec);
    if (!config.ok()) continue;
    double scale = 1;
    if (auto s = ReadSmallFile(base + ".scale"); s.ok()) scale = std::strtod(Trim(*s).c_str(), nullptr);
    std::string unit = "Joules";
    if (auto u = ReadSmallFile(base + ".unit"); u.ok()) unit = Trim(*u);
    if (unit != "Joules") continue;  // we only know how to turn Joules into µJ
    for (size_t pkg = 0; pkg < cpus.size(); ++pkg) {
      perf_event_attr attr{};
      attr.size = sizeof attr;
      attr.type = static_cast<uint32_t>(type);
      attr.config = *config;
      // pid -1 + a cpu: a system-wide counter on that package; needs
      // CAP_PERFMON or perf_event_paranoid <= 0.
      int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpus[pkg], -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        int err = errno;
        if (first_error.ok()) {
          std::string msg = std::string("perf_event_open(power/") + kind.event + "/, cpu " + std::to_string(cpus[pkg]) +
                            "): " + std::strerror(err);
          first_error = (err == EACCES || err == EPERM)
                            ? PermissionDenied(msg + "; system-wide perf events need CAP_PERFMON, root, or "
                                                     "`sudo sysctl kernel.perf_event_paranoid=0`")
                            : Unavailable(msg);
        }
        continue;
      }
      std::string domain = kind.domain_prefix;
      if (!kind.system_wide) domain += std::to_string(pkg);
      domains.push_back({domain, kind.counts_in_total});
      counters.push_back({fd, scale * 1e6});
      if (kind.system_wide) break;
    }
  }
  if (counters.empty()) {
    close_all();
    if (!first_error.ok()) return first_error;
    return Unavailable(pmu + " lists no energy events in Joules");
  }
  return std::unique_ptr<Meter>(new PerfPowerMeter(std::move(domains), std::move(counters)));
}

}  // namespace magneton::energy
