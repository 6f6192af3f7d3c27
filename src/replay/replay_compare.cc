#include "replay/replay_compare.h"

#include <algorithm>
#include <limits>
#include <set>

#include "energy/attribution.h"

namespace magneton::replay {

StatusOr<OnlineEnergy> OnlineEnergyPerCall(const Trace& trace, const std::vector<int64_t>& op_ids,
                                           const std::vector<std::string>& domains) {
  OnlineEnergy out;
  std::set<std::string> recorded;
  for (const EnergySample& s : trace.energy_samples) recorded.insert(s.domain);
  for (const std::string& d : domains) {
    if (!recorded.count(d)) out.missing += (out.missing.empty() ? "" : ",") + d;
  }
  if (domains.empty() || op_ids.empty() || !out.missing.empty()) {
    if (domains.empty()) out.missing = "(no domain)";
    out.uj_per_call = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  std::vector<size_t> index;
  for (int64_t id : op_ids) {
    auto it = std::lower_bound(trace.ops.begin(), trace.ops.end(), id,
                               [](const OpEvent& op, int64_t v) { return op.id < v; });
    if (it == trace.ops.end() || it->id != id) return NotFound("the trace has no op " + std::to_string(id));
    index.push_back(static_cast<size_t>(it - trace.ops.begin()));
  }
  bool all_measured = true;
  double total_uj = 0;
  for (const std::string& d : domains) {
    MAGNETON_ASSIGN_OR_RETURN(energy::Attribution a, energy::AttributeEnergy(trace, d));
    all_measured = all_measured && a.provenance == Provenance::kMeasured;
    for (size_t i : index) total_uj += a.ops[i].inclusive_uj;
  }
  out.uj_per_call = total_uj / static_cast<double>(index.size());
  out.provenance = all_measured ? Provenance::kMeasured : Provenance::kEstimated;
  return out;
}

}  // namespace magneton::replay
