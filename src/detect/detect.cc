// The detect stage end to end: domain choice, attribution, matching.
#include <set>

#include "magneton/detect.h"

namespace magneton::detect {
namespace {

std::set<std::string> Domains(const Trace& t) {
  std::set<std::string> out;
  for (const EnergySample& s : t.energy_samples) out.insert(s.domain);
  return out;
}

}  // namespace

StatusOr<DetectResult> Detect(const Trace& a, const FingerprintMap& fa, const Trace& b, const FingerprintMap& fb,
                              const Options& options) {
  if (fa.empty() || fb.empty()) {
    return FailedPrecondition("a trace has no tensor fingerprints; diff matches tensor values, so record both with "
                              "`magneton record --values ...`");
  }
  std::string domain = options.domain;
  if (domain.empty()) {
    // One domain, not a sum: domains can overlap (core inside package, psys
    // over everything), so the largest common one stands for the run.
    const std::set<std::string> db = Domains(b);
    double best_uj = -1;
    for (const std::string& d : Domains(a)) {
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
  }
  MAGNETON_ASSIGN_OR_RETURN(energy::Attribution ea, energy::AttributeEnergy(a, domain));
  MAGNETON_ASSIGN_OR_RETURN(energy::Attribution eb, energy::AttributeEnergy(b, domain));
  MAGNETON_ASSIGN_OR_RETURN(MatchResult match, MatchTraces(a, fa, b, fb, options.match));
  return DetectFromMatch(a, fa, ea, b, fb, eb, match, options);
}

}  // namespace magneton::detect
