#include "torch_hook/replay_energy.h"

#include "energy/energy.h"
#include "replay/replay_target.h"

namespace magneton::replay {

namespace {

// Replay reads its meters once per round (seconds apart): a GPU's energy
// counter is right at any spacing, integrated power only when read often,
// so the counter comes first here (the recording's sampler prefers 1 kHz
// instant power, docs/ENERGY.md "NVML").
energy::DiscoveryOptions ReplayDiscoveryOptions() {
  energy::DiscoveryOptions options;
  options.nvml.source = "counter-first";
  return options;
}

}  // namespace

ReplayMeters::ReplayMeters()
    : discovery_(std::make_shared<energy::MeterDiscovery>(energy::DiscoverMeters(ReplayDiscoveryOptions()))) {}

EnergyReader ReplayMeters::ReaderFor(const std::string& device_domain) const {
  EnergyReader reader;
  // (meter, domain index) pairs to sum.
  std::vector<std::pair<size_t, size_t>> picks;
  bool all_measured = true;
  for (size_t i : discovery_->chosen) {
    const energy::MeterProbe& probe = discovery_->probes[i];
    const auto& domains = probe.meter->domains();
    bool used = false;
    for (size_t d = 0; d < domains.size(); ++d) {
      const bool wanted = device_domain.empty() ? !IsDeviceDomain(domains[d].name) && domains[d].counts_in_total
                                                : domains[d].name == device_domain;
      if (!wanted) continue;
      picks.emplace_back(i, d);
      reader.domains.push_back(domains[d].name);
      used = true;
    }
    if (!used) continue;
    if (!reader.meter_name.empty()) reader.meter_name += "+";
    reader.meter_name += probe.name;
    all_measured = all_measured && probe.provenance == Provenance::kMeasured;
  }
  if (picks.empty()) {
    reader.why_none = device_domain.empty() ? "no meter reads the host here"
                                            : "no meter reads " + device_domain + " here";
    reader.meter_name.clear();
    return reader;
  }
  reader.provenance = all_measured ? Provenance::kMeasured : Provenance::kEstimated;
  // Shared, so the reader can outlive this object; meters are read by one
  // thread at a time (the replay's).
  auto discovery = discovery_;
  reader.read_total_uj = [discovery, picks]() -> StatusOr<double> {
    double total_uj = 0;
    size_t last_meter = SIZE_MAX;
    energy::MeterReading reading;
    for (const auto& [meter_index, domain] : picks) {
      if (meter_index != last_meter) {
        MAGNETON_ASSIGN_OR_RETURN(reading, discovery->probes[meter_index].meter->Read());
        last_meter = meter_index;
      }
      total_uj += reading.domains[domain].energy_uj;
    }
    return total_uj;
  };
  return reader;
}

}  // namespace magneton::replay
