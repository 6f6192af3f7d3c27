#include "analysis/domain.h"

#include <set>

#include "energy/attribution.h"

namespace magneton::analysis {
namespace {

std::set<std::string> Domains(const Trace& t) {
  std::set<std::string> out;
  for (const EnergySample& s : t.energy_samples) out.insert(s.domain);
  return out;
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "+") + p;
  return out;
}

}  // namespace

StatusOr<std::string> ChooseDomain(const Trace& a, const Trace& b, const std::string& requested) {
  const std::set<std::string> da = Domains(a), db = Domains(b);
  if (!requested.empty()) {
    for (const std::string& part : energy::DomainParts(requested)) {
      if (!da.count(part) || !db.count(part)) {
        return InvalidArgument("energy domain '" + part + "' is not in both traces (see `magneton show`)");
      }
    }
    return requested;
  }
  // GPU work is charged through the device activities of GPUs both sides
  // have them on; host work through the largest host domain both have.
  std::vector<std::string> gpus;
  std::string host;
  double host_uj = -1;
  for (const std::string& d : da) {
    if (!db.count(d)) continue;
    if (!energy::DeviceOfDomain(d).empty()) {
      const bool on_a = energy::HasDeviceActivity(a, d), on_b = energy::HasDeviceActivity(b, d);
      if (on_a && on_b) gpus.push_back(d);
      // Kernels on one side only: one side would be charged through its
      // kernels, the other by host time; not a comparison.
      if (on_a || on_b) continue;
    }
    auto total_uj = energy::DomainTotalUj(a, d);
    if (total_uj.ok() && *total_uj > host_uj) {
      host_uj = *total_uj;
      host = d;
    }
  }
  if (!gpus.empty()) {
    // Both, when their joules may be added (one provenance); else the GPUs'
    // alone: the device work is what a GPU run spends most on.
    for (const std::string& candidate :
         {host.empty() || !energy::DeviceOfDomain(host).empty() ? std::string() : host + "+" + Joined(gpus),
          Joined(gpus)}) {
      if (candidate.empty()) continue;
      if (energy::AttributeEnergy(a, candidate).ok() && energy::AttributeEnergy(b, candidate).ok()) return candidate;
    }
  }
  if (host.empty()) {
    return FailedPrecondition("the two traces have no energy domain in common; record both on the same machine "
                              "(see `magneton meters`)");
  }
  return host;
}

}  // namespace magneton::analysis
