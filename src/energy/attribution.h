// Per-op energy from a trace's ops and one domain's energy samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "energy/device_energy.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::energy {

// One op's share, indexed like trace.ops (56 bytes an op: two sides of a
// 2.4 M-op diff hold 4.8 M of them; docs/PERFORMANCE.md, "At scale").
struct OpEnergy {
  double exclusive_uj = 0;  // self time only: nested ops on its thread excluded
  double inclusive_uj = 0;  // exclusive + every op nested inside it
  int64_t exclusive_ns = 0;  // self time inside the sample window
  // Top-level ops only: the gap on the op's thread since the thread's previous
  // top-level op ended, i.e. the host code (interpreter, dispatch, frees)
  // that issued this op. Its energy counts only while no op ran on any
  // thread, so it is part of unattributed_uj, never of another op's.
  double issue_uj = 0;
  int64_t issue_ns = 0;
  // The recorder's ops nested inside this one (--values fingerprinting,
  // kFingerprintOpName): inside the op's interval but not its work, so in
  // neither exclusive_uj nor inclusive_uj. The op's own time is its interval
  // less recorder_ns.
  double recorder_uj = 0;
  int64_t recorder_ns = 0;
};

// Device attribution: the time of the device activities an op launched
// itself, and with its nested ops'.
struct OpDeviceTime {
  int64_t device_ns = 0;
  int64_t inclusive_device_ns = 0;
};

struct Attribution {
  std::string domain;
  Provenance provenance = Provenance::kEstimated;
  int64_t window_start_ns = 0;  // first and last sample of the domain
  int64_t window_end_ns = 0;
  double total_uj = 0;         // counter delta over the window
  double attributed_uj = 0;    // sum of exclusive_uj
  double unattributed_uj = 0;  // energy while no op ran (idle gaps)
  double issue_uj = 0;         // the part of unattributed_uj charged to ops as issue time
  // The job: from the first op's start to the last op's end, the recorder's
  // work at stop ("at_stop" recorder ops) left out (clipped to the window).
  // Before it lie interpreter start-up and imports, after it exit and that
  // work at stop; none is the work compared.
  int64_t ops_start_ns = 0;
  int64_t ops_end_ns = 0;
  double job_uj = 0;               // energy over [ops_start_ns, ops_end_ns], less recorder_in_job_uj
  // The recorder's own ops (IsRecorderOp, e.g. JAX warm-up runs) and the
  // ops nested in them (those captured into a CUDA graph): their exclusive
  // energy and time, all of it; and the part inside the job, which is not
  // the job's.
  double recorder_uj = 0;
  int64_t recorder_ns = 0;
  double recorder_in_job_uj = 0;
  int64_t recorder_in_job_ns = 0;
  double idle_in_job_uj = 0;       // unattributed energy inside the job (issue time included)
  int64_t idle_in_job_ns = 0;      // wall time inside the job with no op running
  // Inside the job, with no op running and no thread issuing one: what is
  // left of idle_in_job once issue time is charged (pauses of every thread).
  double unclaimed_in_job_uj = 0;
  int64_t unclaimed_in_job_ns = 0;
  std::vector<OpEnergy> ops;   // one per trace op, same order as trace.ops
  // One per trace op where basis has "device"; empty on host attribution
  // (no op launched device work). DeviceTimeOf reads either.
  std::vector<OpDeviceTime> device_time;
  // How ops were charged: "host" (their exclusive time on their threads),
  // "device" (a GPU domain with device activities: the energy of the
  // kernels, copies and fills each op launched, device_energy.h), or
  // "host+device" (a sum of domains, one of each, "cpu-package-0+gpu-0").
  std::string basis = "host";
  // Device attribution: each device's per-activity energy and idle. Idle
  // inside the job is also in idle_in_job_uj and in device_idle_in_job_uj
  // (its own region in detect), never in unclaimed_in_job_uj.
  std::vector<DeviceEnergy> devices;
  double device_idle_in_job_uj = 0;
  int64_t device_idle_in_job_ns = 0;
  double unlinked_device_uj = 0;  // activities no recorded op launched: in unattributed_uj

  // The op's device time (by index into trace.ops); zero on host attribution.
  OpDeviceTime DeviceTimeOf(size_t op) const { return op < device_time.size() ? device_time[op] : OpDeviceTime{}; }
};

// Interpolates the cumulative counter piecewise-linearly between samples
// (power-only samples are integrated with the trapezoid rule first), charges
// each instant's energy evenly to the ops running then on distinct threads
// (the innermost op of each thread), and the rest to unattributed. Ops are
// clipped to the window. attributed_uj + unattributed_uj == total_uj up to
// rounding.
// A GPU domain (gpu-<N>) of a trace with device activity on that GPU is
// attributed through the activities instead (basis "device"): each op gets
// the energy of what it launched. "<a>+<b>" sums the attributions of its
// domains, which must share a provenance (basis "host+device" for a host
// domain plus a GPU one): device energy for GPU work, host energy for host
// work.
StatusOr<Attribution> AttributeEnergy(const Trace& trace, const std::vector<EnergySample>& samples,
                                      const std::string& domain);

// The parts of a domain name: {"cpu-package-0", "gpu-0"} for "cpu-package-0+gpu-0".
std::vector<std::string> DomainParts(const std::string& domain);

// Same, with the trace's own energy samples.
StatusOr<Attribution> AttributeEnergy(const Trace& trace, const std::string& domain);
// The energy the domain's meter saw over the trace's samples: the
// Attribution's total_uj, for choosing a domain without attributing a
// host domain's every op. Fails where AttributeEnergy would.
StatusOr<double> DomainTotalUj(const Trace& trace, const std::string& domain);

}  // namespace magneton::energy
