#include "energy/rapl_meter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "base/clock.h"
#include "energy/counter_unwrap.h"
#include "energy/sysfs.h"

namespace magneton::energy {
namespace {

namespace fs = std::filesystem;

// "intel-rapl:0:1" -> prefix "intel-rapl", parts {0, 1}. intel-rapl-mmio is
// skipped on purpose: it is a second interface to the same package counter
// and would count it twice.
bool ParseZoneDir(const std::string& dir, std::string* prefix, std::vector<int>* parts) {
  size_t colon = dir.find(':');
  if (colon == std::string::npos) return false;  // "intel-rapl" itself: the control type
  *prefix = dir.substr(0, colon);
  if (*prefix != "intel-rapl" && *prefix != "amd-rapl") return false;
  parts->clear();
  std::string rest = dir.substr(colon + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t next = rest.find(':', start);
    std::string p = rest.substr(start, next == std::string::npos ? std::string::npos : next - start);
    if (p.empty() || p.find_first_not_of("0123456789") != std::string::npos) return false;
    parts->push_back(std::stoi(p));
    if (next == std::string::npos) break;
    start = next + 1;
  }
  return parts->size() == 1 || parts->size() == 2;
}

// The no-double-count rule. Packages and DRAM are disjoint (DRAM is a child
// zone in sysfs but its energy is not part of the package counter), so they
// form the total. core and uncore are parts of their package; psys is the
// whole SoC (package + DRAM + more); both are reported but not summed.
void NameDomain(const std::string& zone_name, int package, RaplZone* zone) {
  if (zone_name.rfind("package-", 0) == 0) {
    zone->domain = "cpu-" + zone_name;
    zone->counts_in_total = true;
  } else if (zone_name == "dram") {
    zone->domain = "dram-" + std::to_string(package);
    zone->counts_in_total = true;
  } else if (zone_name == "psys") {
    zone->domain = "psys";
    zone->counts_in_total = false;
  } else {
    zone->domain = zone_name + "-" + std::to_string(package);  // core-0, uncore-0
    zone->counts_in_total = false;
  }
}

class RaplMeter final : public Meter {
 public:
  RaplMeter(std::vector<RaplZone> zones, std::vector<int> fds, ReadFileFn read_file, double max_power_w)
      : zones_(std::move(zones)), fds_(std::move(fds)), read_file_(std::move(read_file)) {
    for (const auto& z : zones_) {
      domains_.push_back({z.domain, z.counts_in_total});
      unwrappers_.emplace_back(z.max_energy_range_uj);
      max_poll_ns_ = std::min(max_poll_ns_, MaxPollPeriodNs(z.max_energy_range_uj, max_power_w));
    }
  }
  ~RaplMeter() override {
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }

  std::string_view name() const override { return "rapl"; }
  const std::vector<MeterDomain>& domains() const override { return domains_; }
  MeterKind kind() const override { return MeterKind::kEnergyCounter; }
  // The RAPL counters update about every 976 µs.
  int64_t update_period_ns() const override { return 1'000'000; }
  int64_t max_poll_period_ns() const override { return max_poll_ns_; }
  Provenance provenance() const override { return Provenance::kMeasured; }

  StatusOr<MeterReading> Read() override {
    MeterReading reading;
    reading.domains.resize(zones_.size());
    int64_t before = MonotonicNowNs();
    std::vector<uint64_t> raw(zones_.size());
    for (size_t i = 0; i < zones_.size(); ++i) {
      auto value = ReadRaw(i);
      if (!value.ok()) return value.status();
      raw[i] = *value;
    }
    int64_t after = MonotonicNowNs();
    reading.t_ns = before + (after - before) / 2;
    for (size_t i = 0; i < zones_.size(); ++i) reading.domains[i].energy_uj = unwrappers_[i].Feed(raw[i]);
    return reading;
  }

 private:
  StatusOr<uint64_t> ReadRaw(size_t i) {
    std::string path = zones_[i].path + "/energy_uj";
    if (read_file_ || fds_[i] < 0) {
      MAGNETON_ASSIGN_OR_RETURN(std::string text, ReadWith(read_file_, path));
      return ParseUint(text, path);
    }
    // pread on a kept fd: sysfs regenerates the value on every read from
    // offset 0, and it avoids an open/close per domain per millisecond.
    char buf[32];
    ssize_t n = ::pread(fds_[i], buf, sizeof buf - 1, 0);
    if (n < 0) return Unavailable(path + ": " + std::strerror(errno));
    return ParseUint(std::string(buf, static_cast<size_t>(n)), path);
  }

  std::vector<RaplZone> zones_;
  std::vector<int> fds_;
  ReadFileFn read_file_;
  std::vector<MeterDomain> domains_;
  std::vector<CounterUnwrapper> unwrappers_;
  int64_t max_poll_ns_ = std::numeric_limits<int64_t>::max();
};

}  // namespace

std::string RaplPermissionHint() {
  return "since Linux 5.10 energy_uj is readable by root only (CVE-2020-8694). Grant read access until "
         "reboot with `sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj "
         "/sys/class/powercap/intel-rapl:*:*/energy_uj`, or permanently with a udev rule, e.g. "
         "/etc/udev/rules.d/99-rapl.rules: ACTION==\"add\", SUBSYSTEM==\"powercap\", "
         "RUN+=\"/bin/chmod o+r /sys%p/energy_uj\"; or run as root";
}

StatusOr<std::vector<RaplZone>> ListRaplZones(const std::string& sysfs_root, const ReadFileFn& read_file) {
  fs::path base = fs::path(sysfs_root + "/sys/class/powercap");
  std::error_code ec;
  if (!fs::is_directory(base, ec))
    return Unavailable(base.string() + " does not exist: no powercap/RAPL driver loaded (intel_rapl_msr, "
                                       "rapl for AMD), or not exposed here" + VirtualMachineHint());
  struct Found {
    std::string dir, prefix;
    std::vector<int> parts;
  };
  std::vector<Found> found;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    Found f;
    f.dir = entry.path().filename().string();
    if (ParseZoneDir(f.dir, &f.prefix, &f.parts)) found.push_back(std::move(f));
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.prefix, a.parts) < std::tie(b.prefix, b.parts);
  });
  // Package number of each top-level zone, for naming its sub-zones.
  std::map<std::pair<std::string, int>, int> package_of;
  std::vector<RaplZone> zones;
  std::map<std::string, bool> seen_domain;
  for (const auto& f : found) {
    RaplZone zone;
    zone.path = (base / f.dir).string();
    MAGNETON_ASSIGN_OR_RETURN(std::string name, ReadWith(read_file, zone.path + "/name"));
    zone.zone_name = Trim(name);
    int package = f.parts[0];
    if (f.parts.size() == 1) {
      if (zone.zone_name.rfind("package-", 0) == 0) {
        try {
          package = std::stoi(zone.zone_name.substr(8));
        } catch (...) {
        }
      }
      package_of[{f.prefix, f.parts[0]}] = package;
    } else {
      auto it = package_of.find({f.prefix, f.parts[0]});
      if (it != package_of.end()) package = it->second;
    }
    NameDomain(zone.zone_name, package, &zone);
    // An amd-rapl tree next to intel-rapl (a kernel exposing both) would
    // report the same package twice: the first wins.
    if (seen_domain[zone.domain]) continue;
    seen_domain[zone.domain] = true;
    auto range = ReadWith(read_file, zone.path + "/max_energy_range_uj");
    if (range.ok()) {
      MAGNETON_ASSIGN_OR_RETURN(zone.max_energy_range_uj, ParseUint(*range, zone.path + "/max_energy_range_uj"));
    }
    zones.push_back(std::move(zone));
  }
  if (zones.empty())
    return Unavailable(base.string() + " has no intel-rapl or amd-rapl zones" + VirtualMachineHint());
  return zones;
}

StatusOr<std::unique_ptr<Meter>> OpenRaplMeter(const RaplOptions& options) {
  std::string root = SysfsRoot(options.sysfs_root);
  MAGNETON_ASSIGN_OR_RETURN(std::vector<RaplZone> zones, ListRaplZones(root, options.read_file));
  std::vector<int> fds(zones.size(), -1);
  auto close_all = [&fds] {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  };
  for (size_t i = 0; i < zones.size(); ++i) {
    std::string path = zones[i].path + "/energy_uj";
    // Read once now so a permission problem is reported at discovery, not
    // as a failure in the middle of a recording.
    auto text = ReadWith(options.read_file, path);
    if (!text.ok()) {
      close_all();
      if (text.status().code() == StatusCode::kPermissionDenied)
        return PermissionDenied("cannot read " + path + ": permission denied; " + RaplPermissionHint());
      return text.status();
    }
    auto value = ParseUint(*text, path);
    if (!value.ok()) {
      close_all();
      return value.status();
    }
    if (!options.read_file) fds[i] = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  return std::unique_ptr<Meter>(new RaplMeter(std::move(zones), std::move(fds), options.read_file,
                                              options.max_power_bound_w));
}

}  // namespace magneton::energy
