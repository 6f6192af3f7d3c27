#include <cmath>

#include "energy/energy.h"

namespace magneton::energy {

std::vector<EnergySample> ToEnergySamples(const Meter& meter, const MeterReading& reading) {
  std::vector<EnergySample> out;
  const auto& domains = meter.domains();
  out.reserve(domains.size());
  for (size_t i = 0; i < domains.size() && i < reading.domains.size(); ++i) {
    EnergySample s;
    s.domain = domains[i].name;
    s.t_ns = reading.t_ns;
    s.energy_uj = reading.domains[i].energy_uj;
    s.power_mw = reading.domains[i].power_mw;
    s.provenance = meter.provenance();
    s.meter = std::string(meter.name());
    out.push_back(std::move(s));
  }
  return out;
}

double TotalEnergyUj(const Meter& meter, const MeterReading& reading) {
  double total = 0;
  const auto& domains = meter.domains();
  for (size_t i = 0; i < domains.size() && i < reading.domains.size(); ++i) {
    double e = reading.domains[i].energy_uj;
    if (domains[i].counts_in_total && !std::isnan(e)) total += e;
  }
  return total;
}

}  // namespace magneton::energy
