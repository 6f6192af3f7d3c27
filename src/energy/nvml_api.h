// The few NVML declarations we use, written out so that building needs no
// CUDA toolkit and running needs no driver: libnvidia-ml is dlopen'ed.
// Values match nvml.h; the fake in tests/cpp/fake_nvml.cc shares this file.
#pragma once

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

enum : nvmlReturn_t {
  kNvmlSuccess = 0,
  kNvmlErrorUninitialized = 1,
  kNvmlErrorInvalidArgument = 2,
  kNvmlErrorNotSupported = 3,
  kNvmlErrorNotFound = 6,
};
enum : unsigned int { kNvmlDeviceMigEnable = 1 };

typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByUUID_fn)(const char* uuid, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device, unsigned long long* energy_mj);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int* power_mw);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t device, unsigned int* current_mode,
                                               unsigned int* pending_mode);
}
