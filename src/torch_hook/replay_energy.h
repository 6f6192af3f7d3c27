// The energy reading replay loops use: the meter `record` would choose.
#pragma once

#include <functional>
#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::replay {

struct EnergyReader {
  std::function<StatusOr<double>()> read_total_uj;  // empty: no meter at all
  std::string meter_name;
  Provenance provenance = Provenance::kEstimated;
};

EnergyReader OpenReplayEnergyReader();

}  // namespace magneton::replay
