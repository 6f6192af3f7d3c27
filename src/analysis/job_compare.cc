#include "analysis/job_compare.h"

#include <algorithm>
#include <cmath>

#include "analysis/domain.h"
#include "energy/attribution.h"
#include "magneton/trace_reader.h"

namespace magneton::analysis {
namespace {

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double Variance(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return ss / static_cast<double>(v.size() - 1);
}

std::vector<double> Logs(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) out.push_back(std::log(std::max(x, 1e-9)));
  return out;
}

}  // namespace

StatusOr<JobEnergies> LoadJobEnergies(const std::vector<std::string>& first, const std::vector<std::string>& second,
                                      const std::string& domain) {
  if (first.empty() || second.empty()) return InvalidArgument("give at least one trace on each side");
  JobEnergies out;
  {
    MAGNETON_ASSIGN_OR_RETURN(const Trace a, ReadTrace(first.front()));
    MAGNETON_ASSIGN_OR_RETURN(const Trace b, ReadTrace(second.front()));
    MAGNETON_ASSIGN_OR_RETURN(out.domain, ChooseDomain(a, b, domain));
  }
  bool have_provenance = false;
  for (const auto* side : {&first, &second}) {
    for (const std::string& path : *side) {
      MAGNETON_ASSIGN_OR_RETURN(const Trace t, ReadTrace(path));
      MAGNETON_ASSIGN_OR_RETURN(const energy::Attribution e, energy::AttributeEnergy(t, out.domain));
      if (have_provenance && e.provenance != out.provenance) {
        return FailedPrecondition(path + "'s energy is " + ProvenanceName(e.provenance) + ", the first trace's " +
                                  ProvenanceName(out.provenance) +
                                  "; measured and estimated joules are never compared");
      }
      out.provenance = e.provenance;
      have_provenance = true;
      (side == &first ? out.first_uj : out.second_uj).push_back(e.job_uj);
      (side == &first ? out.first_load : out.second_load)
          .push_back(detect::MachineLoadOf(t.meta, e.ops_start_ns, e.ops_end_ns));
    }
  }
  return out;
}

JobComparison CompareJobs(const std::vector<double>& first_uj, const std::vector<double>& second_uj, bool paired,
                          double confidence) {
  JobComparison c;
  c.runs_first = first_uj.size();
  c.runs_second = second_uj.size();
  c.mean_first_uj = Mean(first_uj);
  c.mean_second_uj = Mean(second_uj);
  const std::vector<double> la = Logs(first_uj), lb = Logs(second_uj);
  const double diff = Mean(lb) - Mean(la);
  c.ratio = std::exp(diff);
  if (paired && la.size() == lb.size() && la.size() >= 2) {
    std::vector<double> d;
    for (size_t i = 0; i < la.size(); ++i) d.push_back(lb[i] - la[i]);
    const double half = detect::StudentT(confidence, d.size() - 1) * std::sqrt(Variance(d) / static_cast<double>(d.size()));
    c.interval = {true, std::exp(diff - half), std::exp(diff + half)};
    c.method = "paired t";
    return c;
  }
  if (la.size() + lb.size() < 3 || la.empty() || lb.empty()) return c;
  // Welch: unequal variances; a side with one recording borrows the other's spread.
  double va = Variance(la), vb = Variance(lb);
  if (la.size() < 2) va = vb;
  if (lb.size() < 2) vb = va;
  const double sa = va / static_cast<double>(la.size()), sb = vb / static_cast<double>(lb.size());
  const double se = std::sqrt(sa + sb);
  double df = 1;
  const double denom = (la.size() > 1 ? sa * sa / static_cast<double>(la.size() - 1) : 0) +
                       (lb.size() > 1 ? sb * sb / static_cast<double>(lb.size() - 1) : 0);
  if (denom > 0) df = std::max(1.0, (sa + sb) * (sa + sb) / denom);
  const double half = detect::StudentT(confidence, static_cast<size_t>(std::floor(df))) * se;
  c.interval = {true, std::exp(diff - half), std::exp(diff + half)};
  c.method = "Welch t";
  return c;
}

double JobLoadBound(const JobComparison& c, const detect::MachineLoadShares& first_load,
                    const detect::MachineLoadShares& second_load) {
  detect::SideSummary first, second;
  first.machine = first_load;
  second.machine = second_load;
  const bool first_costlier = c.ratio < 1;  // ratio is second/first
  return first_costlier ? detect::LoadSlowdownBound(first, second) : detect::LoadSlowdownBound(second, first);
}

JobCall CallJobs(const JobComparison& c, double tau, const detect::MachineLoadShares& first_load,
                 const detect::MachineLoadShares& second_load) {
  const double first_over_second = 1 / c.ratio;
  const bool beyond = first_over_second > 1 + tau || first_over_second < 1 / (1 + tau);
  if (!c.interval.known) return JobCall::kNoInterval;
  // The interval on costlier/cheaper: its low end must clear 1 + tau, and
  // the costlier side's load bound times that.
  const double low_first = 1 / c.interval.high, low_second = c.interval.low;
  const double bound = JobLoadBound(c, first_load, second_load);
  if (low_first > 1 + tau) return low_first <= bound * (1 + tau) ? JobCall::kBusierCostsMore : JobCall::kFirstCostsMore;
  if (low_second > 1 + tau) {
    return low_second <= bound * (1 + tau) ? JobCall::kBusierCostsMore : JobCall::kSecondCostsMore;
  }
  return beyond ? JobCall::kInconclusive : JobCall::kNoDifference;
}

}  // namespace magneton::analysis
