// Energy meters: one interface over RAPL (powercap), NVML, the perf power PMU
// and a CPU-time estimate, plus discovery of which of them work here.
// Every value carries its provenance: measured joules are never mixed with
// estimated ones. docs/ENERGY.md explains each meter and rule.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {
class Clock;  // base/clock.h
}  // namespace magneton

namespace magneton::energy {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What the hardware exposes: a cumulative energy counter (RAPL, NVML on
// Volta+) or instantaneous power that we integrate ourselves.
enum class MeterKind { kEnergyCounter, kPowerSamples };

struct MeterDomain {
  std::string name;  // "cpu-package-0", "dram-0", "core-0", "psys", "gpu-0"
  // False for a domain contained in (core, uncore ⊂ package) or containing
  // (psys ⊇ package + dram) another reported domain: summing it would count
  // the same joules twice. See docs/ENERGY.md, "No double counting".
  bool counts_in_total = true;
};

struct DomainReading {
  double energy_uj = kNaN;  // cumulative, unwrapped; NaN if the meter has none
  double power_mw = kNaN;   // instantaneous; NaN if the meter has none
};

// One read of every domain of a meter at (about) the same instant.
struct MeterReading {
  int64_t t_ns = 0;                    // CLOCK_MONOTONIC, midpoint of the read
  std::vector<DomainReading> domains;  // parallel to Meter::domains()
};

class Meter {
 public:
  virtual ~Meter() = default;
  virtual std::string_view name() const = 0;  // "rapl", "nvml", "perf-power", "estimate"
  virtual const std::vector<MeterDomain>& domains() const = 0;
  virtual MeterKind kind() const = 0;
  // How often the underlying value changes; the sampler polls at this period.
  virtual int64_t update_period_ns() const = 0;
  // The longest gap between two reads that still gives correct energy (a
  // wrapping counter must be read before it can wrap twice).
  virtual int64_t max_poll_period_ns() const { return std::numeric_limits<int64_t>::max(); }
  virtual Provenance provenance() const = 0;
  // Reads all domains. Not thread-safe: one reader (the Sampler) per meter,
  // since unwrapping and power integration keep state between reads.
  virtual StatusOr<MeterReading> Read() = 0;
  // What a reader of the numbers should know about how they were taken
  // (which hardware source, checks against a second source), as
  // (key, text) pairs; the recording stores each as meta
  // `energy.<name>.<key>` (docs/TRACE_FORMAT.md). Call between reads, not
  // during one: it reads the state Read keeps.
  virtual std::vector<std::pair<std::string, std::string>> Notes() const { return {}; }
};

// One EnergySample per domain of the reading, labelled with the meter's
// name and provenance.
std::vector<EnergySample> ToEnergySamples(const Meter& meter, const MeterReading& reading);

// Sum of energy_uj over the domains with counts_in_total.
double TotalEnergyUj(const Meter& meter, const MeterReading& reading);

// Reads a small file (sysfs attribute). Tests inject one to simulate errors
// that root cannot otherwise get (EACCES), since the suite runs as root.
using ReadFileFn = std::function<StatusOr<std::string>(const std::string& path)>;

// ---- RAPL via /sys/class/powercap -----------------------------------------
struct RaplOptions {
  // Prefix of /sys; unset: $MAGNETON_SYSFS_ROOT, or "" for the real /sys.
  std::optional<std::string> sysfs_root;
  // Unset: open energy_uj files once and pread them on every Read().
  ReadFileFn read_file;
  // Upper bound on any one domain's power, used to pick a poll period that
  // can never miss a wrap: above every shipping socket's TDP, with margin.
  double max_power_bound_w = 1000.0;
};
StatusOr<std::unique_ptr<Meter>> OpenRaplMeter(const RaplOptions& options = {});

// ---- NVML via dlopen -----------------------------------------------------
struct NvmlOptions {
  // Unset: $MAGNETON_NVML_LIBRARY, or "libnvidia-ml.so.1".
  std::optional<std::string> library_path;
  // Unset: $CUDA_VISIBLE_DEVICES (absent: every GPU is visible).
  std::optional<std::string> cuda_visible_devices;
  // A rank of a distributed job measures the GPU it uses, not every GPU its
  // job shares: cuda:<local_rank>, the device torchrun's convention gives
  // it (docs/ARCHITECTURE.md "Distributed jobs"). Unset: $LOCAL_RANK where
  // $WORLD_SIZE is set too (torchrun sets both), else none (every visible
  // GPU). A local rank past the visible GPUs measures every visible GPU.
  std::optional<int> local_rank;
  // Where each GPU's power comes from: "auto" (the instant-power field,
  // NVML_FI_DEV_POWER_INSTANT, read every 1 ms where the driver has it;
  // else the total-energy counter every 5 ms; else nvmlDeviceGetPowerUsage,
  // a moving average, every 20 ms); "counter-first" (the counter where
  // there is one, then as auto) for a reader that reads seldom, such as
  // replay's rounds: integrated power is only right when read often; or one
  // of "instant", "counter", "average" (an error where a GPU lacks it).
  // Unset: $MAGNETON_NVML_SOURCE, else "auto".
  std::optional<std::string> source;
};
StatusOr<std::unique_ptr<Meter>> OpenNvmlMeter(const NvmlOptions& options = {});

// ---- perf_event power PMU ------------------------------------------------
struct PerfPowerOptions {
  std::optional<std::string> sysfs_root;  // as RaplOptions::sysfs_root
};
StatusOr<std::unique_ptr<Meter>> OpenPerfPowerMeter(const PerfPowerOptions& options = {});

// ---- Estimate (no counters) ------------------------------------------------
// The linear model, all its constants in one place (docs/ENERGY.md):
//   energy = idle_package_w · wall_time
//          + dynamic, where dynamic =
//              nanojoules_per_cycle · cycles + nanojoules_per_instruction · instructions
//                  if perf_event_open can count them, else
//              joules_per_cpu_second · process_cpu_time
struct EstimateModel {
  double idle_package_w = 10.0;             // a server package at idle: ~10-30 W; laptops ~2-5 W
  double joules_per_cpu_second = 10.0;      // one busy core: ~150 W TDP / 16 cores
  double nanojoules_per_cycle = 2.0;        // 3 GHz · 2 nJ = 6 W per busy core ...
  double nanojoules_per_instruction = 0.5;  // ... + IPC 2 · 3 GHz · 0.5 nJ = 3 W
  // Defaults overridden by MAGNETON_ESTIMATE_IDLE_W, _J_PER_CPU_S,
  // _NJ_PER_CYCLE, _NJ_PER_INSTRUCTION where set.
  static EstimateModel FromEnv();
};
struct EstimateOptions {
  EstimateModel model = EstimateModel::FromEnv();
  bool use_perf_counters = true;  // cycles/instructions where the kernel allows
  // Wall and process CPU time come from here; null: the system clocks. Tests
  // pass a scripted clock to check the model exactly. Must outlive the meter.
  Clock* clock = nullptr;
};
StatusOr<std::unique_ptr<Meter>> OpenEstimateMeter(const EstimateOptions& options = {});

// ---- Discovery ---------------------------------------------------------------
struct MeterProbe {
  std::string name;         // "rapl", "nvml", "perf-power", "estimate"
  std::string description;  // what it reads, for humans
  Provenance provenance = Provenance::kMeasured;
  Status status;                 // ok: available; otherwise why not
  std::unique_ptr<Meter> meter;  // set when available
};

struct MeterDiscovery {
  std::vector<MeterProbe> probes;  // every meter, preferred first
  std::vector<size_t> chosen;      // indices into probes that `record` uses
  Provenance chosen_provenance = Provenance::kEstimated;
  std::string choice_reason;
};

struct DiscoveryOptions {
  RaplOptions rapl;
  NvmlOptions nvml;
  PerfPowerOptions perf;
  EstimateOptions estimate;
};

// Probes every meter. Choice: all measured meters that work (RAPL for the CPU,
// else the perf power PMU, which reads the same hardware; NVML for GPUs);
// the estimate only when no measured meter works. Never both.
MeterDiscovery DiscoverMeters(const DiscoveryOptions& options = {});

}  // namespace magneton::energy
