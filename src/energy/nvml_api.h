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

// Field ids of nvmlDeviceGetFieldValues (nvml.h NVML_FI_DEV_*); ids never change.
enum : unsigned int {
  kNvmlFieldPowerInstant = 186,  // current GPU power, mW (newer drivers, every architecture)
  kNvmlFieldEnergy = 191,        // total energy since the driver loaded, mJ
};
// nvmlValueType_t values we accept for the two fields above.
enum : int {
  kNvmlValueDouble = 0,
  kNvmlValueUnsignedInt = 1,
  kNvmlValueUnsignedLong = 2,
  kNvmlValueUnsignedLongLong = 3,
  kNvmlValueSignedLongLong = 4,
  kNvmlValueSignedInt = 5,
};

typedef union nvmlValue_st {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
} nvmlValue_t;

// Layout as in nvml.h (40 bytes): the caller sets fieldId and scopeId, NVML
// fills the rest and a return code per field.
typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;   // 0: the GPU alone (not the module)
  long long timestamp;    // µs since 1970 (wall clock), when the value was taken
  long long latencyUsec;  // how long NVML took to update it
  int valueType;          // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByUUID_fn)(const char* uuid, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device, unsigned long long* energy_mj);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int* power_mw);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int values_count,
                                                   nvmlFieldValue_t* values);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t device, unsigned int* current_mode,
                                               unsigned int* pending_mode);
}
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t must match nvml.h");
