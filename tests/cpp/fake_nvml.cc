// A fake libnvidia-ml for the NVML meter tests, scripted through env vars
// read at nvmlInit_v2:
//   FAKE_NVML_DEVICE_COUNT  GPUs (default 2); UUIDs are GPU-fake-<i>
//   FAKE_NVML_MODE          normal | power_only | wrap | mig | init_fail |
//                           instant | instant_nocounter (nvmlDeviceGetFieldValues
//                           has the instant-power field; other modes say
//                           NOT_SUPPORTED for it, as older drivers do)
//   FAKE_NVML_STEP_MJ       energy added per energy read (default 100 mJ)
//   FAKE_NVML_POWER_MW      power reported in power_only (default 250000 mW)
//   FAKE_NVML_WRAP_AFTER    wrap: reads before the counter restarts at 0 (default 3)
//   FAKE_NVML_COUNTER_PERCENT  instant: the energy field counts this share of
//                           FAKE_NVML_POWER_MW over time (default 100)
//   FAKE_NVML_REFRESH_US    instant: the fields' timestamp advances this many µs
//   FAKE_NVML_REFRESH_READS   every this many reads of a GPU's fields, as a driver
//                           that refreshes slower than it is read (default 0:
//                           the wall clock at every read)
// Built twice: with FAKE_NVML_OMIT_DEVICE_COUNT the library lacks
// nvmlDeviceGetCount_v2, as an old driver would.
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "energy/nvml_api.h"

namespace {

struct FakeDevice {
  unsigned long long energy_reads = 0;
  unsigned long long field_reads = 0;
};

constexpr int kMaxDevices = 8;
FakeDevice g_devices[kMaxDevices];
int g_count = 0;
std::string g_mode = "normal";
unsigned long long g_step_mj = 100;
unsigned int g_power_mw = 250000;
unsigned long long g_wrap_after = 3;
unsigned long long g_counter_percent = 100;
long long g_refresh_us = 0;
unsigned long long g_refresh_reads = 0;
long long g_init_us = 0;
long long g_init_ns = 0;
bool g_initialized = false;

long long NowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

unsigned long long EnvU(const char* name, unsigned long long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Handles are 1-based indices disguised as pointers.
nvmlDevice_t Handle(int i) { return reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(i + 1)); }
int Index(nvmlDevice_t d) {
  auto i = static_cast<int>(reinterpret_cast<uintptr_t>(d)) - 1;
  return i >= 0 && i < g_count ? i : -1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) {
  const char* mode = std::getenv("FAKE_NVML_MODE");
  g_mode = mode ? mode : "normal";
  if (g_mode == "init_fail") return 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  g_count = static_cast<int>(EnvU("FAKE_NVML_DEVICE_COUNT", 2));
  if (g_count > kMaxDevices) g_count = kMaxDevices;
  g_step_mj = EnvU("FAKE_NVML_STEP_MJ", 100);
  g_power_mw = static_cast<unsigned int>(EnvU("FAKE_NVML_POWER_MW", 250000));
  g_wrap_after = EnvU("FAKE_NVML_WRAP_AFTER", 3);
  g_counter_percent = EnvU("FAKE_NVML_COUNTER_PERCENT", 100);
  g_refresh_us = static_cast<long long>(EnvU("FAKE_NVML_REFRESH_US", 0));
  g_refresh_reads = EnvU("FAKE_NVML_REFRESH_READS", 0);
  g_init_ns = NowNs(CLOCK_MONOTONIC);
  g_init_us = NowNs(CLOCK_REALTIME) / 1000;
  for (auto& d : g_devices) d = FakeDevice{};
  g_initialized = true;
  return kNvmlSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  g_initialized = false;
  return kNvmlSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kNvmlSuccess: return "Success";
    case kNvmlErrorNotSupported: return "Not Supported";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

#ifndef FAKE_NVML_OMIT_DEVICE_COUNT
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!g_initialized) return kNvmlErrorUninitialized;
  *count = static_cast<unsigned int>(g_count);
  return kNvmlSuccess;
}
#endif

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                                   nvmlDevice_t* device) {
  if (!g_initialized) return kNvmlErrorUninitialized;
  if (static_cast<int>(index) >= g_count) return kNvmlErrorInvalidArgument;
  *device = Handle(static_cast<int>(index));
  return kNvmlSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid,
                                                                               nvmlDevice_t* device) {
  for (int i = 0; i < g_count; ++i) {
    if (std::string(uuid) == "GPU-fake-" + std::to_string(i)) {
      *device = Handle(i);
      return kNvmlSuccess;
    }
  }
  return kNvmlErrorNotFound;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                                         unsigned long long* mj) {
  int i = Index(device);
  if (i < 0) return kNvmlErrorInvalidArgument;
  if (g_mode == "power_only") return kNvmlErrorNotSupported;  // pre-Volta
  unsigned long long n = g_devices[i].energy_reads++;
  unsigned long long base = 1'000'000ULL * static_cast<unsigned long long>(i + 1);
  if (g_mode == "wrap" && n >= g_wrap_after) {
    *mj = (n - g_wrap_after) * g_step_mj;  // the counter restarted from 0
  } else {
    *mj = base + n * g_step_mj;
  }
  return kNvmlSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                                                             unsigned int* mw) {
  if (Index(device) < 0) return kNvmlErrorInvalidArgument;
  *mw = g_power_mw;
  return kNvmlSuccess;
}

// The instant-power field (a constant FAKE_NVML_POWER_MW) and the energy
// field (that power over the time since nvmlInit, scaled by
// FAKE_NVML_COUNTER_PERCENT), as newer drivers report them.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count,
                                                                              nvmlFieldValue_t* values) {
  const int i = Index(device);
  if (i < 0 || count < 0 || (count > 0 && !values)) return kNvmlErrorInvalidArgument;
  const bool instant = g_mode == "instant" || g_mode == "instant_nocounter";
  long long now_us = NowNs(CLOCK_REALTIME) / 1000;
  const unsigned long long reads = g_devices[i].field_reads++;
  if (g_refresh_us > 0 && g_refresh_reads > 0)
    now_us = g_init_us + static_cast<long long>(reads / g_refresh_reads) * g_refresh_us;
  for (int k = 0; k < count; ++k) {
    nvmlFieldValue_t& v = values[k];
    v.timestamp = now_us;
    v.latencyUsec = 0;
    v.nvmlReturn = kNvmlErrorNotSupported;
    if (instant && v.fieldId == kNvmlFieldPowerInstant) {
      v.valueType = kNvmlValueUnsignedInt;
      v.value.uiVal = g_power_mw;
      v.nvmlReturn = kNvmlSuccess;
    } else if (g_mode == "instant" && v.fieldId == kNvmlFieldEnergy) {
      const double elapsed_ms = static_cast<double>(NowNs(CLOCK_MONOTONIC) - g_init_ns) / 1e6;
      v.valueType = kNvmlValueUnsignedLongLong;
      v.value.ullVal = 1'000'000ULL * static_cast<unsigned long long>(i + 1) +
                       static_cast<unsigned long long>(g_power_mw * elapsed_ms / 1000.0 *
                                                       static_cast<double>(g_counter_percent) / 100.0);
      v.nvmlReturn = kNvmlSuccess;
    }
  }
  return kNvmlSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                                          unsigned int* pending) {
  if (Index(device) < 0) return kNvmlErrorInvalidArgument;
  *current = *pending = (g_mode == "mig" && Index(device) == 0) ? static_cast<unsigned int>(kNvmlDeviceMigEnable) : 0u;
  return kNvmlSuccess;
}

}  // extern "C"
