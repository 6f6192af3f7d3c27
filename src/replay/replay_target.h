// Where a planned op runs when replayed, and what that means for the loop
// (docs/ENERGY.md, "Replay on a GPU"): an op with an input or a device
// argument on a GPU is a device op — its inputs are regenerated there, every
// reading waits for the device, CUDA graphs are tried, its energy is its
// GPU's (NVML domain gpu-<N> for cuda:<N>) and rounds last the paper's 2 s.
// Any other op is a host op, measured on the host's domains.
#pragma once

#include <string>

#include "magneton/status.h"
#include "replay/replay_plan.h"

namespace magneton::replay {

struct ReplayTarget {
  std::string device = "cpu";  // "cpu", "cuda:0"
  bool on_device = false;
  // The energy domain of the device ("gpu-0"); empty for host ops, which are
  // measured on every domain that is not a GPU's.
  std::string device_domain;
  bool want_graph = false;  // CUDA: capture the calls in a graph where the op allows
};

// InvalidArgument when the op's tensors are on two different devices.
StatusOr<ReplayTarget> SelectReplayTarget(const PlannedOp& op);

// Whether a meter domain is a GPU's (NVML names them gpu-<N>).
bool IsDeviceDomain(const std::string& domain);

// Round length when the user gave none: 0.2 s on the host, where counters
// update every millisecond; 2 s on a GPU, whose counter and power readings
// lag by tens to hundreds of ms (as the paper's replay does).
inline constexpr double kHostMinRoundS = 0.2;
inline constexpr double kDeviceMinRoundS = 2.0;

// The smallest movement of a meter's counter a round waits for: 100 of its
// steps, so the step is at most 1% of the reading (NVML counts whole mJ,
// RAPL ~61 µJ; the estimate is continuous).
double MinEnergyDeltaUj(const std::string& meter_names);

}  // namespace magneton::replay
