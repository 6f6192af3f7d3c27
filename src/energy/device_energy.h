// Per-kernel energy (docs/ENERGY.md, "GPU attribution"): a GPU domain's
// energy (NVML's counter, or its power integrated) spread over the device
// activities that ran on that GPU. In every stretch of time between two
// activity boundaries, the energy the device drew is split evenly among the
// activities running then (k overlapping kernels: 1/k each), so a kernel's
// share follows its overlap with the others; a stretch with none running is
// device idle. Conservation: Σ kernel energy + idle = the window's energy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/provenance.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::energy {

struct KernelEnergy {
  size_t activity = 0;      // index into trace.device_activities
  int64_t op_id = kNoId;    // the op charged with it (DeviceActivity::op_id)
  double energy_uj = 0;     // its share of the device's energy
  int64_t duration_ns = 0;  // its interval, clipped to the sample window
  int64_t shared_ns = 0;    // of that, time another activity ran at once on the device
};

struct DeviceEnergy {
  std::string domain;  // "gpu-0"
  std::string device;  // "cuda:0"
  Provenance provenance = Provenance::kMeasured;
  int64_t window_start_ns = 0, window_end_ns = 0;  // first and last sample
  double total_uj = 0;
  std::vector<KernelEnergy> kernels;  // the device's activities, in trace order
  double kernels_uj = 0;  // Σ kernels: energy while any activity ran
  int64_t busy_ns = 0;    // time any activity ran
  double idle_uj = 0;     // energy while none ran (the whole window)
  int64_t idle_ns = 0;
  // The job as the caller gives it: inside it, device idle is its own
  // region (the GPU waiting on the host, or on nothing).
  int64_t job_start_ns = 0, job_end_ns = 0;
  double job_uj = 0;
  double idle_in_job_uj = 0;
  int64_t idle_in_job_ns = 0;
  // What bounds the per-kernel error (docs/ENERGY.md): the samples' median
  // period, and the activities shorter than it (their energy is the
  // period's average power times their duration, not their own power).
  int64_t sample_period_ns = 0;
  size_t shorter_than_period = 0;
};

// The CUDA device a GPU energy domain measures: "gpu-3" -> "cuda:3" (NVML
// names domains by CUDA ordinal); "" for any other domain.
std::string DeviceOfDomain(const std::string& domain);
// Whether the trace has device activity on the device `domain` measures.
bool HasDeviceActivity(const Trace& trace, const std::string& domain);

// Over the samples of `domain` (a GPU domain) and the trace's activities on
// its device; job bounds are clipped to the window.
StatusOr<DeviceEnergy> AttributeDeviceEnergy(const Trace& trace, const std::vector<EnergySample>& samples,
                                             const std::string& domain, int64_t job_start_ns, int64_t job_end_ns);

}  // namespace magneton::energy
