#include "torch_hook/replay_energy.h"

#include <memory>

#include "energy/energy.h"

namespace magneton::replay {

EnergyReader OpenReplayEnergyReader() {
  // The same meters `record` would use; shared so the reader can outlive us.
  auto discovery = std::make_shared<energy::MeterDiscovery>(energy::DiscoverMeters());
  if (discovery->chosen.empty()) return {};
  EnergyReader reader;
  for (size_t i : discovery->chosen) {
    if (!reader.meter_name.empty()) reader.meter_name += "+";
    reader.meter_name += discovery->probes[i].name;
  }
  reader.provenance = discovery->chosen_provenance;
  reader.read_total_uj = [discovery]() -> StatusOr<double> {
    double total_uj = 0;
    for (size_t i : discovery->chosen) {
      energy::Meter& meter = *discovery->probes[i].meter;
      MAGNETON_ASSIGN_OR_RETURN(energy::MeterReading reading, meter.Read());
      total_uj += energy::TotalEnergyUj(meter, reading);
    }
    return total_uj;
  };
  return reader;
}

}  // namespace magneton::replay
