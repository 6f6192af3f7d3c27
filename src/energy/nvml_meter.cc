// NVML GPU energy, per GPU from the best source its driver has: the
// instant-power field read at 1 kHz and integrated, else the total-energy
// counter (mJ, Volta and newer), else the averaged power integrated between
// reads. docs/ENERGY.md, "NVML".
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "base/clock.h"
#include "energy/counter_unwrap.h"
#include "energy/nvml_api.h"
#include "energy/energy.h"

namespace magneton::energy {
namespace {

// A dlopen'ed libnvidia-ml and the functions we need from it.
struct NvmlLibrary {
  void* handle = nullptr;
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlDeviceGetCount_v2_fn get_count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn get_handle_by_index = nullptr;
  nvmlDeviceGetHandleByUUID_fn get_handle_by_uuid = nullptr;  // optional
  nvmlDeviceGetTotalEnergyConsumption_fn get_energy = nullptr;  // optional: pre-Volta lacks it
  nvmlDeviceGetPowerUsage_fn get_power = nullptr;
  nvmlDeviceGetFieldValues_fn get_field_values = nullptr;  // optional: older drivers lack it
  nvmlDeviceGetMigMode_fn get_mig_mode = nullptr;  // optional: pre-Ampere drivers lack it

  std::string Error(nvmlReturn_t r) const {
    std::string s = error_string ? error_string(r) : "";
    return (s.empty() ? "NVML error" : s) + " (code " + std::to_string(r) + ")";
  }
  ~NvmlLibrary() {
    if (shutdown) shutdown();
    if (handle) dlclose(handle);
  }
};

template <typename Fn>
Status Require(void* handle, const char* symbol, const std::string& path, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out) return Status::Ok();
  return Unavailable(path + " lacks " + symbol + ": the NVIDIA driver is too old for this meter (need R450+)");
}

template <typename Fn>
void Optional(void* handle, const char* symbol, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

// Where one GPU's energy comes from, best first.
enum class PowerSource { kInstant, kCounter, kAverage };

int64_t SourcePeriodNs(PowerSource s) {
  switch (s) {
    case PowerSource::kInstant: return 1'000'000;  // ~1 kHz: kernels of a few ms get their own power
    case PowerSource::kCounter: return 5'000'000;  // the counter moves every few ms
    case PowerSource::kAverage: return 20'000'000;  // a ~20-50 ms average: faster only repeats it
  }
  return 20'000'000;
}

// A field value as a double; false for a type the two fields never have.
bool FieldAsDouble(const nvmlFieldValue_t& f, double* out) {
  switch (f.valueType) {
    case kNvmlValueDouble: *out = f.value.dVal; return true;
    case kNvmlValueUnsignedInt: *out = f.value.uiVal; return true;
    case kNvmlValueUnsignedLong: *out = static_cast<double>(f.value.ulVal); return true;
    case kNvmlValueUnsignedLongLong: *out = static_cast<double>(f.value.ullVal); return true;
    case kNvmlValueSignedLongLong: *out = static_cast<double>(f.value.sllVal); return true;
    case kNvmlValueSignedInt: *out = f.value.siVal; return true;
    default: return false;
  }
}

struct Gpu {
  std::string domain;  // gpu-<CUDA ordinal>: matches torch's cuda:<N>
  nvmlDevice_t device = nullptr;
  PowerSource source = PowerSource::kAverage;
  CounterUnwrapper unwrap;     // counter source: a decrease is a driver reset
  double integrated_uj = 0;    // instant and average sources: trapezoid sum
  double last_power_mw = kNaN;
  int64_t last_t_ns = 0;
  // Instant source: the energy counter read in the same call, to check the
  // integral against (NaN where the field is not supported).
  bool field_energy = false;
  CounterUnwrapper check_unwrap;
  double check_first_uj = kNaN, check_last_uj = kNaN;
  double integrated_at_first_check_uj = kNaN, integrated_at_last_check_uj = kNaN;
  // Instant source: how often the driver refreshes the value, from the
  // field's own timestamps (gaps between distinct ones, in 100 µs buckets).
  int64_t last_field_ts_us = 0;
  std::map<int64_t, int64_t> refresh_gaps;  // bucket (100 µs) -> count
};

// The median of gaps kept as bucket -> count.
int64_t MedianBucket(const std::map<int64_t, int64_t>& buckets) {
  int64_t total = 0;
  for (const auto& [b, n] : buckets) total += n;
  int64_t seen = 0;
  for (const auto& [b, n] : buckets) {
    seen += n;
    if (2 * seen >= total) return b;
  }
  return 0;
}

class NvmlMeter final : public Meter {
 public:
  NvmlMeter(std::unique_ptr<NvmlLibrary> lib, std::vector<Gpu> gpus) : lib_(std::move(lib)), gpus_(std::move(gpus)) {
    all_counters_ = true;
    period_ns_ = SourcePeriodNs(PowerSource::kAverage);
    for (const auto& g : gpus_) {
      domains_.push_back({g.domain, true});
      all_counters_ = all_counters_ && g.source == PowerSource::kCounter;
      period_ns_ = std::min(period_ns_, SourcePeriodNs(g.source));
    }
  }
  std::string_view name() const override { return "nvml"; }
  const std::vector<MeterDomain>& domains() const override { return domains_; }
  MeterKind kind() const override { return all_counters_ ? MeterKind::kEnergyCounter : MeterKind::kPowerSamples; }
  // The fastest source's period: a slower one read as often only repeats
  // its value, which the sampler does not store twice.
  int64_t update_period_ns() const override { return period_ns_; }
  Provenance provenance() const override { return Provenance::kMeasured; }

  StatusOr<MeterReading> Read() override {
    MeterReading reading;
    reading.domains.resize(gpus_.size());
    int64_t before = MonotonicNowNs();
    std::vector<unsigned long long> energy_mj(gpus_.size());
    std::vector<unsigned int> power_mw(gpus_.size());
    std::vector<std::array<nvmlFieldValue_t, 2>> fields(gpus_.size());
    for (size_t i = 0; i < gpus_.size(); ++i) {
      Gpu& g = gpus_[i];
      nvmlReturn_t r = kNvmlSuccess;
      switch (g.source) {
        case PowerSource::kCounter: r = lib_->get_energy(g.device, &energy_mj[i]); break;
        case PowerSource::kAverage: r = lib_->get_power(g.device, &power_mw[i]); break;
        case PowerSource::kInstant:
          fields[i] = {};
          fields[i][0].fieldId = kNvmlFieldPowerInstant;
          fields[i][1].fieldId = kNvmlFieldEnergy;
          r = lib_->get_field_values(g.device, g.field_energy ? 2 : 1, fields[i].data());
          if (r == kNvmlSuccess) r = fields[i][0].nvmlReturn;
          break;
      }
      if (r != kNvmlSuccess) return Unavailable("NVML read of " + g.domain + " failed: " + lib_->Error(r));
    }
    int64_t after = MonotonicNowNs();
    reading.t_ns = before + (after - before) / 2;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      Gpu& g = gpus_[i];
      if (g.source == PowerSource::kCounter) {
        reading.domains[i].energy_uj = g.unwrap.Feed(energy_mj[i] * 1000ULL);
        continue;
      }
      double p = power_mw[i];
      if (g.source == PowerSource::kInstant) {
        if (!FieldAsDouble(fields[i][0], &p) || !(p >= 0))
          return Unavailable("NVML instant power of " + g.domain + " has an unreadable value (type " +
                             std::to_string(fields[i][0].valueType) + ")");
        NoteRefresh(g, fields[i][0].timestamp);
      }
      if (g.last_t_ns != 0) {
        // mW · ns = 1e-12 J = 1e-6 µJ.
        g.integrated_uj += (g.last_power_mw + p) / 2 * static_cast<double>(reading.t_ns - g.last_t_ns) * 1e-6;
      }
      g.last_power_mw = p;
      g.last_t_ns = reading.t_ns;
      reading.domains[i].energy_uj = g.integrated_uj;
      reading.domains[i].power_mw = p;
      double counter_mj = 0;
      if (g.field_energy && fields[i][1].nvmlReturn == kNvmlSuccess && FieldAsDouble(fields[i][1], &counter_mj) &&
          counter_mj >= 0) {
        const double counter_uj = g.check_unwrap.Feed(static_cast<unsigned long long>(counter_mj) * 1000ULL);
        if (std::isnan(g.check_first_uj)) {
          g.check_first_uj = counter_uj;
          g.integrated_at_first_check_uj = g.integrated_uj;
        }
        g.check_last_uj = counter_uj;
        g.integrated_at_last_check_uj = g.integrated_uj;
      }
    }
    return reading;
  }

  std::vector<std::pair<std::string, std::string>> Notes() const override {
    std::vector<std::pair<std::string, std::string>> notes;
    for (const Gpu& g : gpus_) {
      std::string source;
      switch (g.source) {
        case PowerSource::kInstant:
          source = "instant power (NVML_FI_DEV_POWER_INSTANT) read every 1 ms, integrated";
          if (g.field_energy) source += "; the energy counter read in the same call as a check";
          break;
        case PowerSource::kCounter: source = "total-energy counter read every 5 ms"; break;
        case PowerSource::kAverage:
          source = "averaged power (nvmlDeviceGetPowerUsage, a 20-50 ms moving average) read every 20 ms, integrated";
          break;
      }
      notes.emplace_back(g.domain + ".source", source);
      if (g.source != PowerSource::kInstant) continue;
      if (!g.refresh_gaps.empty())
        notes.emplace_back(g.domain + ".instant_refresh_us",
                           std::to_string(MedianBucket(g.refresh_gaps) * 100));
      const double counter_uj = g.check_last_uj - g.check_first_uj;
      const double integrated_uj = g.integrated_at_last_check_uj - g.integrated_at_first_check_uj;
      // Whole mJ steps: below 1 J of counted energy the check says nothing.
      if (!std::isnan(counter_uj) && counter_uj >= 1e6) {
        double percent = 100.0 * (integrated_uj - counter_uj) / counter_uj;
        if (std::fabs(percent) < 0.05) percent = 0;  // printed as +0.0%, not -0.0%
        // snprintf, not fmt: bench/gpu_check builds this file with plain g++.
        char text[160];
        std::snprintf(text, sizeof(text), "integrated instant power %.3f J, energy counter %.3f J (%+.1f%%)",
                      integrated_uj / 1e6, counter_uj / 1e6, percent);
        notes.emplace_back(g.domain + ".instant_vs_counter", text);
      }
    }
    return notes;
  }

 private:
  // Gaps between the distinct timestamps NVML gives the instant field:
  // the driver's own refresh period, which bounds how finely power is known.
  static void NoteRefresh(Gpu& g, long long field_ts_us) {
    if (field_ts_us <= 0 || field_ts_us == g.last_field_ts_us) return;
    if (g.last_field_ts_us > 0 && field_ts_us > g.last_field_ts_us)
      g.refresh_gaps[(field_ts_us - g.last_field_ts_us + 50) / 100] += 1;
    g.last_field_ts_us = field_ts_us;
  }

  std::unique_ptr<NvmlLibrary> lib_;
  std::vector<Gpu> gpus_;
  std::vector<MeterDomain> domains_;
  bool all_counters_ = true;
  int64_t period_ns_ = 0;
};

// CUDA_VISIBLE_DEVICES as CUDA reads it: a comma list of indices or UUIDs,
// cut at the first entry that does not name a device.
StatusOr<std::vector<nvmlDevice_t>> VisibleDevices(const NvmlLibrary& lib, unsigned int count,
                                                   const std::optional<std::string>& visible) {
  std::vector<nvmlDevice_t> out;
  if (!visible) {
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t d = nullptr;
      nvmlReturn_t r = lib.get_handle_by_index(i, &d);
      if (r != kNvmlSuccess) return Unavailable("nvmlDeviceGetHandleByIndex(" + std::to_string(i) + "): " + lib.Error(r));
      out.push_back(d);
    }
    return out;
  }
  size_t start = 0;
  const std::string& list = *visible;
  while (start <= list.size() && !list.empty()) {
    size_t comma = list.find(',', start);
    std::string entry = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.erase(0, 1);
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    nvmlDevice_t d = nullptr;
    if (!entry.empty() && entry.find_first_not_of("0123456789") == std::string::npos) {
      unsigned long idx = std::stoul(entry);
      if (idx >= count || lib.get_handle_by_index(static_cast<unsigned int>(idx), &d) != kNvmlSuccess) break;
    } else if (entry.rfind("MIG-", 0) == 0) {
      return FailedPrecondition("CUDA_VISIBLE_DEVICES selects MIG instance " + entry +
                                ": NVML reports energy for the whole GPU, not one MIG instance, so other "
                                "tenants' work would be charged to this run; use a whole GPU");
    } else if (entry.rfind("GPU-", 0) == 0 && lib.get_handle_by_uuid) {
      if (lib.get_handle_by_uuid(entry.c_str(), &d) != kNvmlSuccess) break;
    } else {
      break;  // CUDA ignores the rest of the list from here
    }
    out.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// $LOCAL_RANK of a torchrun rank ($WORLD_SIZE set too); none otherwise.
std::optional<int> LocalRankFromEnv() {
  const char* local = std::getenv("LOCAL_RANK");
  const char* world = std::getenv("WORLD_SIZE");
  if (!local || !world || !*local) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(local, &end, 10);
  if (*end != '\0' || v < 0 || v > 1 << 20) return std::nullopt;
  return static_cast<int>(v);
}

// The best source g's driver has, or the one asked for; probing reads each
// once. Sets g.field_energy for the instant source.
StatusOr<PowerSource> ChooseSource(const NvmlLibrary& lib, Gpu& g, const std::string& wanted) {
  unsigned long long mj = 0;
  if (wanted == "counter-first" && lib.get_energy && lib.get_energy(g.device, &mj) == kNvmlSuccess)
    return PowerSource::kCounter;
  std::string why_not_instant = "this driver lacks nvmlDeviceGetFieldValues";
  if (lib.get_field_values && (wanted == "auto" || wanted == "counter-first" || wanted == "instant")) {
    nvmlFieldValue_t fields[2] = {};
    fields[0].fieldId = kNvmlFieldPowerInstant;
    fields[1].fieldId = kNvmlFieldEnergy;
    nvmlReturn_t r = lib.get_field_values(g.device, 2, fields);
    double mw = 0;
    if (r == kNvmlSuccess) r = fields[0].nvmlReturn;
    if (r == kNvmlSuccess && FieldAsDouble(fields[0], &mw) && mw >= 0) {
      double mj = 0;
      g.field_energy = fields[1].nvmlReturn == kNvmlSuccess && FieldAsDouble(fields[1], &mj) && mj >= 0;
      return PowerSource::kInstant;
    }
    why_not_instant = "its instant-power field reads " + (r == kNvmlSuccess ? std::string("no usable value") : lib.Error(r)) +
                      " (older drivers lack the field; newer ones have it on every architecture)";
  }
  if (wanted == "instant") return Unavailable(g.domain + " has no instant power: " + why_not_instant);
  if (wanted != "average" && lib.get_energy && lib.get_energy(g.device, &mj) == kNvmlSuccess)
    return PowerSource::kCounter;
  if (wanted == "counter") return Unavailable(g.domain + " has no total-energy counter (it needs a Volta or newer GPU)");
  unsigned int mw = 0;
  nvmlReturn_t pr = lib.get_power(g.device, &mw);
  if (pr != kNvmlSuccess) return Unavailable(g.domain + " reports neither total energy nor power: " + lib.Error(pr));
  return PowerSource::kAverage;
}

}  // namespace

StatusOr<std::unique_ptr<Meter>> OpenNvmlMeter(const NvmlOptions& options) {
  std::string path = "libnvidia-ml.so.1";
  if (options.library_path) {
    path = *options.library_path;
  } else if (const char* env = std::getenv("MAGNETON_NVML_LIBRARY")) {
    path = env;
  }
  auto lib = std::make_unique<NvmlLibrary>();
  lib->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char* err = dlerror();
    return Unavailable("cannot load " + path + " (" + (err ? err : "unknown error") +
                       "): no NVIDIA driver installed, or no NVIDIA GPU on this machine");
  }
  MAGNETON_RETURN_IF_ERROR(Require(lib->handle, "nvmlInit_v2", path, &lib->init));
  MAGNETON_RETURN_IF_ERROR(Require(lib->handle, "nvmlDeviceGetCount_v2", path, &lib->get_count));
  MAGNETON_RETURN_IF_ERROR(Require(lib->handle, "nvmlDeviceGetHandleByIndex_v2", path, &lib->get_handle_by_index));
  MAGNETON_RETURN_IF_ERROR(Require(lib->handle, "nvmlDeviceGetPowerUsage", path, &lib->get_power));
  Optional(lib->handle, "nvmlShutdown", &lib->shutdown);
  Optional(lib->handle, "nvmlErrorString", &lib->error_string);
  Optional(lib->handle, "nvmlDeviceGetHandleByUUID", &lib->get_handle_by_uuid);
  Optional(lib->handle, "nvmlDeviceGetTotalEnergyConsumption", &lib->get_energy);
  Optional(lib->handle, "nvmlDeviceGetMigMode", &lib->get_mig_mode);
  Optional(lib->handle, "nvmlDeviceGetFieldValues", &lib->get_field_values);

  std::string wanted = options.source.value_or("");
  if (!options.source) {
    if (const char* env = std::getenv("MAGNETON_NVML_SOURCE")) wanted = env;
  }
  if (wanted.empty()) wanted = "auto";
  if (wanted != "auto" && wanted != "counter-first" && wanted != "instant" && wanted != "counter" &&
      wanted != "average")
    return InvalidArgument("unknown NVML power source '" + wanted +
                           "': use auto, counter-first, instant, counter or average");

  auto shutdown = lib->shutdown;
  lib->shutdown = nullptr;  // only after a successful init
  nvmlReturn_t r = lib->init();
  if (r != kNvmlSuccess)
    return Unavailable("nvmlInit failed: " + lib->Error(r) + "; is the NVIDIA kernel driver loaded (nvidia-smi)?");
  lib->shutdown = shutdown;

  unsigned int count = 0;
  r = lib->get_count(&count);
  if (r != kNvmlSuccess) return Unavailable("nvmlDeviceGetCount failed: " + lib->Error(r));
  std::optional<std::string> visible = options.cuda_visible_devices;
  if (!visible) {
    if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) visible = std::string(env);
  }
  MAGNETON_ASSIGN_OR_RETURN(std::vector<nvmlDevice_t> devices, VisibleDevices(*lib, count, visible));
  if (devices.empty())
    return Unavailable(count == 0 ? "NVML sees no GPU" : "CUDA_VISIBLE_DEVICES='" + visible.value_or("") + "' hides every GPU");
  // CUDA index of each measured device: its domain is gpu-<that index>.
  std::vector<size_t> cuda_index;
  const std::optional<int> rank = options.local_rank ? options.local_rank : LocalRankFromEnv();
  if (rank && *rank >= 0 && static_cast<size_t>(*rank) < devices.size()) {
    devices = {devices[*rank]};
    cuda_index = {static_cast<size_t>(*rank)};
  } else {
    for (size_t i = 0; i < devices.size(); ++i) cuda_index.push_back(i);
  }

  std::vector<Gpu> gpus;
  for (size_t i = 0; i < devices.size(); ++i) {
    Gpu g;
    g.domain = "gpu-" + std::to_string(cuda_index[i]);
    g.device = devices[i];
    unsigned int current = 0, pending = 0;
    if (lib->get_mig_mode && lib->get_mig_mode(g.device, &current, &pending) == kNvmlSuccess &&
        current == kNvmlDeviceMigEnable) {
      return FailedPrecondition(g.domain + " has MIG enabled: NVML reports energy for the whole GPU, not one MIG "
                                "instance, so other tenants' work would be charged to this run. Disable MIG "
                                "(`sudo nvidia-smi -i <gpu> -mig 0`) or record CPU energy only");
    }
    MAGNETON_ASSIGN_OR_RETURN(g.source, ChooseSource(*lib, g, wanted));
    gpus.push_back(std::move(g));
  }
  return std::unique_ptr<Meter>(new NvmlMeter(std::move(lib), std::move(gpus)));
}

}  // namespace magneton::energy
