#include "analysis/more_runs.h"

#include <fmt/format.h>

namespace magneton::analysis {

std::string Undecided::Describe() const {
  std::string out;
  if (findings > 0) out = fmt::format("{} finding{}", findings, findings == 1 ? "" : "s");
  if (job) out += out.empty() ? "the job energy" : " and the job energy";
  return out;
}

Undecided FindUndecided(const detect::DetectResult* detection, JobCall job) {
  Undecided out;
  // A job the costlier side's busier machine could explain is open too: the
  // further pairs may run on a quieter one.
  out.job = job == JobCall::kInconclusive || job == JobCall::kBusierCostsMore;
  if (detection == nullptr) return out;
  for (const detect::Finding& f : detection->findings) {
    // Only what the interval left open: a finding that is inconclusive
    // because its point estimate was never beyond tau is decided.
    if (f.verdict != detect::Verdict::kInconclusive) continue;
    if (f.point_verdict == detect::Verdict::kWaste || f.point_verdict == detect::Verdict::kTradeOff) ++out.findings;
  }
  return out;
}

int PairsToAdd(const Undecided& undecided, int more) { return undecided.any() && more > 0 ? more : 0; }

}  // namespace magneton::analysis
