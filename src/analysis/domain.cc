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

}  // namespace

StatusOr<std::string> ChooseDomain(const Trace& a, const Trace& b, const std::string& requested) {
  const std::set<std::string> da = Domains(a), db = Domains(b);
  if (!requested.empty()) {
    if (!da.count(requested) || !db.count(requested)) {
      return InvalidArgument("energy domain '" + requested + "' is not in both traces (see `magneton show`)");
    }
    return requested;
  }
  std::string domain;
  double best_uj = -1;
  for (const std::string& d : da) {
    if (!db.count(d)) continue;
    auto e = energy::AttributeEnergy(a, d);
    if (e.ok() && e->total_uj > best_uj) {
      best_uj = e->total_uj;
      domain = d;
    }
  }
  if (domain.empty()) {
    return FailedPrecondition("the two traces have no energy domain in common; record both on the same machine "
                              "(see `magneton meters`)");
  }
  return domain;
}

}  // namespace magneton::analysis
