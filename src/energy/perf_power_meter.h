// The perf_event "power" PMU: the same RAPL hardware as powercap, read through
// perf_event_open; the kernel extends its 32-bit counters to 64 bits for us.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/status.h"

namespace magneton::energy {

struct PerfPowerEvent {
  std::string event;   // "energy-pkg"
  uint64_t config = 0; // from "event=0x02"
  double scale = 1;    // counts -> unit (Joules)
  std::string unit;    // "Joules"
};

// "event=0x02" -> 2. Only the `event` term is used by the power PMU.
StatusOr<uint64_t> ParsePerfEventConfig(const std::string& text);

// CPUs in a list like "0,18" or "0-3" (the PMU's cpumask: one CPU per package).
StatusOr<std::vector<int>> ParseCpuList(const std::string& text);

}  // namespace magneton::energy
