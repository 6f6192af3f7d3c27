// The energy readings replay loops use: the meters `record` would choose,
// read in the domains of the op's device: a GPU op's own GPU (gpu-<N>), a
// host op's every counted domain that is not a GPU's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::energy {
struct MeterDiscovery;
}  // namespace magneton::energy

namespace magneton::replay {

struct EnergyReader {
  std::function<StatusOr<double>()> read_total_uj;  // empty: no meter reads these domains
  std::string meter_name;                            // "rapl", "nvml", "rapl+estimate"
  Provenance provenance = Provenance::kEstimated;
  std::vector<std::string> domains;  // the domains summed
  std::string why_none;              // when read_total_uj is empty
};

// The meters, discovered once per replay.
class ReplayMeters {
 public:
  ReplayMeters();
  // device_domain: "gpu-0" for a GPU op; "" for a host op.
  EnergyReader ReaderFor(const std::string& device_domain) const;

 private:
  std::shared_ptr<energy::MeterDiscovery> discovery_;
};

}  // namespace magneton::replay
