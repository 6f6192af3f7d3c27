// RAPL through the powercap sysfs interface (intel-rapl and amd-rapl zones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "energy/energy.h"

namespace magneton::energy {

// One powercap zone as found on disk, before it becomes a domain.
struct RaplZone {
  std::string path;          // .../powercap/intel-rapl:0:1
  std::string zone_name;     // contents of `name`: "package-0", "dram", "core", "psys"
  std::string domain;        // "cpu-package-0", "dram-0", ...
  bool counts_in_total = false;
  uint64_t max_energy_range_uj = 0;
};

// Lists the zones under <root>/sys/class/powercap, sorted by path, with the
// no-double-count rule applied (docs/ENERGY.md). Does not read energy_uj.
StatusOr<std::vector<RaplZone>> ListRaplZones(const std::string& sysfs_root,
                                              const ReadFileFn& read_file);

// How to let a non-root user read energy_uj.
std::string RaplPermissionHint();

}  // namespace magneton::energy
