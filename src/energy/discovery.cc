// Probes every meter and picks what `record` uses: measured first, the
// estimate last, never both (estimated joules must not be summed with
// measured ones).
#include <string>

#include "energy/estimate_meter.h"
#include "energy/energy.h"

namespace magneton::energy {
namespace {

std::string DomainList(const Meter& meter) {
  std::string out;
  for (const auto& d : meter.domains()) {
    if (!out.empty()) out += ", ";
    out += d.name;
    if (!d.counts_in_total) out += " (not in total)";
  }
  return out;
}

MeterProbe Probe(std::string name, std::string description, Provenance provenance,
                 StatusOr<std::unique_ptr<Meter>> opened) {
  MeterProbe p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.provenance = provenance;
  if (opened.ok()) {
    p.meter = std::move(opened).value();
    const Meter& m = *p.meter;
    p.description += "; domains: " + DomainList(m) + "; " +
                     (m.kind() == MeterKind::kEnergyCounter ? "energy counter" : "power samples, integrated") +
                     ", updates every " + std::to_string(m.update_period_ns() / 1'000'000) + " ms";
    for (const auto& [key, text] : m.Notes()) p.description += "; " + key + ": " + text;
  } else {
    p.status = opened.status();
  }
  return p;
}

}  // namespace

MeterDiscovery DiscoverMeters(const DiscoveryOptions& options) {
  MeterDiscovery d;
  d.probes.push_back(Probe("rapl", "CPU package/DRAM energy counters via /sys/class/powercap",
                           Provenance::kMeasured, OpenRaplMeter(options.rapl)));
  d.probes.push_back(Probe("perf-power", "CPU energy counters via the perf_event power PMU", Provenance::kMeasured,
                           OpenPerfPowerMeter(options.perf)));
  d.probes.push_back(Probe("nvml", "NVIDIA GPU energy via libnvidia-ml", Provenance::kMeasured,
                           OpenNvmlMeter(options.nvml)));
  auto estimate = OpenEstimateMeter(options.estimate);
  std::string model = estimate.ok() ? DescribeEstimate(**estimate, options.estimate.model) : "";
  d.probes.push_back(Probe("estimate", "CPU energy estimated from measured CPU activity (" + model + ")",
                           Provenance::kEstimated, std::move(estimate)));

  auto available = [&](size_t i) { return d.probes[i].status.ok() && d.probes[i].meter; };
  // RAPL and the perf power PMU read the same hardware: one of them.
  if (available(0)) {
    d.chosen.push_back(0);
  } else if (available(1)) {
    d.chosen.push_back(1);
  }
  if (available(2)) d.chosen.push_back(2);
  if (!d.chosen.empty()) {
    d.chosen_provenance = Provenance::kMeasured;
    d.choice_reason = "measured meters are available; the estimate is not used alongside them";
  } else if (available(3)) {
    d.chosen.push_back(3);
    d.chosen_provenance = Provenance::kEstimated;
    d.choice_reason = "no measured meter is available on this machine, so energy will be estimated";
  } else {
    d.choice_reason = "no meter is available";
  }
  return d;
}

}  // namespace magneton::energy
