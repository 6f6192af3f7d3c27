// Job energy of one program against another's over repeated recordings
// (`magneton compare` without region matching, `magneton gate`): the ratio
// of their geometric means and its confidence interval.
#pragma once

#include <string>
#include <vector>

#include "detect/detect.h"
#include "magneton/provenance.h"
#include "magneton/status.h"

namespace magneton::analysis {

struct JobEnergies {
  std::string domain;  // one domain for every trace (ChooseDomain on the first pair)
  Provenance provenance = Provenance::kEstimated;
  std::vector<double> first_uj, second_uj;  // job energy (first op to last op) per recording
  // Other work on the machine per recording, over its job where the trace
  // holds the sampled series (detect::MachineLoadOf).
  std::vector<detect::MachineLoadShares> first_load, second_load;
};
// Reads every trace and attributes its energy in one domain; refuses
// traces whose provenance differs (measured and estimated never compare).
StatusOr<JobEnergies> LoadJobEnergies(const std::vector<std::string>& first, const std::vector<std::string>& second,
                                      const std::string& domain);

struct JobComparison {
  size_t runs_first = 0, runs_second = 0;
  double mean_first_uj = 0, mean_second_uj = 0;
  double ratio = 1;            // second / first, of the geometric means
  detect::Interval interval;   // on ratio; unknown with one recording on each side
  std::string method;          // "paired t" (equal counts, recorded interleaved), "Welch t", "" (none)
};
// `paired`: the k-th of each side were recorded together (compare's A B A B).
JobComparison CompareJobs(const std::vector<double>& first_uj, const std::vector<double>& second_uj, bool paired,
                          double confidence);

// What a comparison says of the first side against the second at tau.
enum class JobCall {
  kNoInterval,      // one recording per side: a point estimate only
  kFirstCostsMore,  // the interval's low end on first/second clears 1 + tau
  kSecondCostsMore,
  kInconclusive,    // the point estimate is beyond tau, its interval is not: record more runs
  kBusierCostsMore, // the interval clears tau, but other work on the costlier side's machine could explain it
  kNoDifference,    // the point estimate is within tau
};
// `first_load`, `second_load`: each side's mean load over its runs
// (detect::MeanLoad of JobEnergies' loads); a side that costs more while
// other work took materially more of its machine is called kBusierCostsMore
// when the load's bound (detect::LoadSlowdownBound) times (1 + tau) reaches
// its interval's low end: the rule the diff applies to findings and the gate
// to a job (docs/DIFF.md, "A busy machine").
JobCall CallJobs(const JobComparison& comparison, double tau, const detect::MachineLoadShares& first_load = {},
                 const detect::MachineLoadShares& second_load = {});
// The load bound of that rule for the costlier side (1: no material difference).
double JobLoadBound(const JobComparison& comparison, const detect::MachineLoadShares& first_load,
                    const detect::MachineLoadShares& second_load);

}  // namespace magneton::analysis
