// NVML GPU energy: the total-energy counter (mJ, Volta and newer) where it
// exists, else instantaneous power integrated between reads.
#include <dlfcn.h>

#include <cstdlib>
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

struct Gpu {
  std::string domain;  // gpu-<CUDA ordinal>: matches torch's cuda:<N>
  nvmlDevice_t device = nullptr;
  bool has_energy_counter = false;
  CounterUnwrapper unwrap;     // counter mode: a decrease is a driver reset
  double integrated_uj = 0;    // power mode: trapezoid sum
  double last_power_mw = kNaN;
  int64_t last_t_ns = 0;
};

class NvmlMeter final : public Meter {
 public:
  NvmlMeter(std::unique_ptr<NvmlLibrary> lib, std::vector<Gpu> gpus) : lib_(std::move(lib)), gpus_(std::move(gpus)) {
    all_counters_ = true;
    for (const auto& g : gpus_) {
      domains_.push_back({g.domain, true});
      all_counters_ = all_counters_ && g.has_energy_counter;
    }
  }
  std::string_view name() const override { return "nvml"; }
  const std::vector<MeterDomain>& domains() const override { return domains_; }
  MeterKind kind() const override { return all_counters_ ? MeterKind::kEnergyCounter : MeterKind::kPowerSamples; }
  // The energy counter moves every few ms; power is a ~20-50 ms average
  // (docs/ENERGY.md): polling power faster only repeats the same value.
  int64_t update_period_ns() const override { return all_counters_ ? 5'000'000 : 20'000'000; }
  Provenance provenance() const override { return Provenance::kMeasured; }

  StatusOr<MeterReading> Read() override {
    MeterReading reading;
    reading.domains.resize(gpus_.size());
    int64_t before = MonotonicNowNs();
    std::vector<unsigned long long> energy_mj(gpus_.size());
    std::vector<unsigned int> power_mw(gpus_.size());
    for (size_t i = 0; i < gpus_.size(); ++i) {
      Gpu& g = gpus_[i];
      nvmlReturn_t r = g.has_energy_counter ? lib_->get_energy(g.device, &energy_mj[i])
                                            : lib_->get_power(g.device, &power_mw[i]);
      if (r != kNvmlSuccess) return Unavailable("NVML read of " + g.domain + " failed: " + lib_->Error(r));
    }
    int64_t after = MonotonicNowNs();
    reading.t_ns = before + (after - before) / 2;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      Gpu& g = gpus_[i];
      if (g.has_energy_counter) {
        reading.domains[i].energy_uj = g.unwrap.Feed(energy_mj[i] * 1000ULL);
        continue;
      }
      double p = power_mw[i];
      if (g.last_t_ns != 0) {
        // mW · ns = 1e-12 J = 1e-6 µJ.
        g.integrated_uj += (g.last_power_mw + p) / 2 * static_cast<double>(reading.t_ns - g.last_t_ns) * 1e-6;
      }
      g.last_power_mw = p;
      g.last_t_ns = reading.t_ns;
      reading.domains[i].energy_uj = g.integrated_uj;
      reading.domains[i].power_mw = p;
    }
    return reading;
  }

 private:
  std::unique_ptr<NvmlLibrary> lib_;
  std::vector<Gpu> gpus_;
  std::vector<MeterDomain> domains_;
  bool all_counters_ = true;
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
    unsigned long long mj = 0;
    g.has_energy_counter = lib->get_energy && lib->get_energy(g.device, &mj) == kNvmlSuccess;
    if (!g.has_energy_counter) {
      unsigned int mw = 0;
      nvmlReturn_t pr = lib->get_power(g.device, &mw);
      if (pr != kNvmlSuccess)
        return Unavailable(g.domain + " reports neither total energy nor power: " + lib->Error(pr));
    }
    gpus.push_back(std::move(g));
  }
  return std::unique_ptr<Meter>(new NvmlMeter(std::move(lib), std::move(gpus)));
}

}  // namespace magneton::energy
