// Replay against the online attribution (docs/ENERGY.md, "Replay on a
// GPU"): what the recording charged, per occurrence, to the ops a replay
// re-ran, in the domains the replay measured, so `magneton replay` can put
// the two side by side. The op's inclusive energy (its nested ops ran in the
// replay too; the recorder's fingerprints did not).
#pragma once

#include <string>
#include <vector>

#include "magneton/provenance.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::replay {

struct OnlineEnergy {
  double uj_per_call = 0;  // mean over the occurrences; NaN when the trace has no samples in a domain
  Provenance provenance = Provenance::kEstimated;  // measured only when every domain's samples are
  std::string missing;  // the domains asked for that the trace has no samples of
};

// op_ids: the occurrences; domains: those the replay's meter summed.
StatusOr<OnlineEnergy> OnlineEnergyPerCall(const Trace& trace, const std::vector<int64_t>& op_ids,
                                           const std::vector<std::string>& domains);

}  // namespace magneton::replay
