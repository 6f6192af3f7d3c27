#include "analysis/gate.h"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/session_data.h"
#include "base/format.h"
#include "magneton/analysis.h"
#include "report/diff_report.h"

namespace magneton::analysis {
namespace {

// What the region is (module scope or source line), then its first ops.
std::string RegionName(const SessionData& data, const detect::Finding& f) {
  const diagnose::RegionName name = report::RegionNameOf(data.report_input(), f);
  if (f.kind != detect::RegionKind::kMatched || name.basis == "ops") return name.text;
  std::string ops;
  for (size_t i = 0; i < f.names_b.size() && i < 3; ++i) ops += (i ? ", " : "") + f.names_b[i];
  if (f.names_b.size() > 3) ops += fmt::format(", … ({} ops)", f.names_b.size());
  return ops.empty() ? name.text : name.text + " [" + ops + "]";
}

std::string IntervalText(const GateCheck& c) {
  if (!c.interval.known) return "no interval";
  return fmt::format("[{:.3f}, {:.3f}]", c.interval.low, c.interval.high);
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string MdCell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

const char* GateCheckStateName(GateCheckState state) {
  switch (state) {
    case GateCheckState::kPass: return "pass";
    case GateCheckState::kFail: return "fail";
    case GateCheckState::kInconclusive: return "inconclusive";
  }
  return "?";
}

bool GateResult::failed() const {
  for (const GateCheck& c : checks) {
    if (c.state == GateCheckState::kFail) return true;
  }
  return false;
}

GateCheck JobEnergyCheck(const JobComparison& job, const detect::MachineLoadShares& baseline_load,
                         const detect::MachineLoadShares& candidate_load, const GateOptions& options) {
  const double limit = 1 + options.max_regression;
  GateCheck jc;
  jc.name = "job energy";
  jc.ratio = job.ratio;
  jc.interval = job.interval;
  jc.method = job.method;
  // How much costlier other work on the candidate's machine alone could
  // make its job (1: no material difference in load). Used only where the
  // candidate costs more, so it is the candidate's bound.
  const double load_bound = JobLoadBound(job, baseline_load, candidate_load);
  if (job.interval.known && job.interval.low > limit && job.interval.low <= load_bound * limit) {
    jc.state = GateCheckState::kInconclusive;
    jc.message = fmt::format(
        "the candidate's job costs {:+.1f}% (interval {:+.1f}% to {:+.1f}%), but other work took {:.0f}% of the "
        "machine's CPU time while the candidate{} ({:.0f}% for the baseline): that alone can make it up to {:.2f}x "
        "costlier; record the candidate again on a quiet machine",
        100 * (job.ratio - 1), 100 * (job.interval.low - 1), 100 * (job.interval.high - 1),
        100 * candidate_load.Total(), candidate_load.over_job ? "'s jobs ran" : " was recorded",
        100 * baseline_load.Total(), load_bound);
  } else if (job.interval.known && job.interval.low > limit) {
    jc.state = GateCheckState::kFail;
    jc.message = fmt::format("the candidate's job costs {:+.1f}% (interval {:+.1f}% to {:+.1f}%), beyond the limit {:+.1f}%",
                             100 * (job.ratio - 1), 100 * (job.interval.low - 1), 100 * (job.interval.high - 1),
                             100 * options.max_regression);
  } else if (job.ratio > limit) {
    jc.state = GateCheckState::kInconclusive;
    jc.message = job.interval.known
                     ? fmt::format("the candidate's job costs {:+.1f}%, but the interval reaches {:+.1f}%: not "
                                   "significant; record more runs per side",
                                   100 * (job.ratio - 1), 100 * (job.interval.low - 1))
                     : fmt::format("the candidate's job costs {:+.1f}%, from one recording per side: not significant; "
                                   "record 3 or more per side",
                                   100 * (job.ratio - 1));
  } else {
    jc.message = fmt::format("the candidate's job costs {:+.1f}% (limit {:+.1f}%)", 100 * (job.ratio - 1),
                             100 * options.max_regression);
  }
  return jc;
}

StatusOr<GateResult> RunGate(const std::vector<std::string>& baseline, const std::vector<std::string>& candidate,
                             const GateOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(const JobEnergies jobs, LoadJobEnergies(baseline, candidate, options.domain));
  GateResult out;
  out.domain = jobs.domain;
  out.provenance = jobs.provenance;
  out.runs_baseline = baseline.size();
  out.runs_candidate = candidate.size();
  // The baseline was recorded some other time: unpaired.
  const JobComparison job = CompareJobs(jobs.first_uj, jobs.second_uj, /*paired=*/false, options.confidence);
  out.mean_baseline_uj = job.mean_first_uj;
  out.mean_candidate_uj = job.mean_second_uj;
  out.checks.push_back(
      JobEnergyCheck(job, detect::MeanLoad(jobs.first_load), detect::MeanLoad(jobs.second_load), options));

  // Regions: paired by index over the recordings both sides have.
  const size_t n = std::min(baseline.size(), candidate.size());
  AnalysisOptions ao;
  ao.tau = options.max_regression;
  ao.epsilon = options.epsilon;
  ao.domain = jobs.domain;
  auto session = AnalysisSession::OpenRuns(std::vector<std::string>(baseline.begin(), baseline.begin() + n),
                                           std::vector<std::string>(candidate.begin(), candidate.begin() + n), ao);
  Status st = session.ok() ? (*session)->Diff() : session.status();
  if (!st.ok()) {
    out.regions_note = "regions not compared: " + st.message();
    return out;
  }
  const SessionData& data = (*session)->data();
  const detect::DetectResult& det = *data.detection;
  for (size_t i = 0; i < det.findings.size(); ++i) {
    const detect::Finding& f = det.findings[i];
    // Matched regions the candidate spends more on, by more than the limit
    // as a share of its job: a region 91% dearer that is 0.3% of the job is
    // no 5% regression, and checking every small region would fail some
    // identical pair by chance (dozens of regions, each at 95%).
    if (f.kind != detect::RegionKind::kMatched || f.wasteful_side != 'B') continue;
    if (f.verdict == detect::Verdict::kEqual || f.share_of_total < options.max_regression) continue;
    GateCheck rc;
    rc.name = RegionName(data, f);
    rc.ratio = f.energy_ratio > 0 ? 1 / f.energy_ratio : 0;
    if (f.uncertainty.ratio.known) {
      rc.interval = {true, f.uncertainty.ratio.high > 0 ? 1 / f.uncertainty.ratio.high : 0,
                     f.uncertainty.ratio.low > 0 ? 1 / f.uncertainty.ratio.low : 0};
    }
    rc.method = f.uncertainty.method.empty() ? "" : f.uncertainty.method + " over " + f.uncertainty.unit;
    // One recording per side is never significant (the job check says the same).
    const bool significant = n >= 2 && f.verdict != detect::Verdict::kInconclusive;
    rc.state = significant ? GateCheckState::kFail : GateCheckState::kInconclusive;
    std::string why;
    if (!significant) {
      why = n < 2 ? ": one recording per side is not significant; record 3 or more per side"
                  : ": " + f.uncertainty_note;
    }
    rc.message = fmt::format("costs {:+.1f}% in the candidate ({} instance(s), {:.1f}% of its job){}",
                             100 * (rc.ratio - 1), f.instances.size(), 100 * f.share_of_total, why);
    for (const diagnose::Diagnosis& d : data.diagnoses) {
      if (d.finding_index == i) rc.root_cause = d.sentence;
    }
    out.checks.push_back(std::move(rc));
  }
  return out;
}

std::string GateTerminal(const GateResult& r, const GateOptions& options) {
  std::string out = fmt::format("magneton gate: {} — baseline {} run(s), mean job {}; candidate {} run(s), mean job {} "
                                "(domain {}, {})\n",
                                r.failed() ? "FAIL" : "pass", r.runs_baseline,
                                FormatEnergy(r.mean_baseline_uj, r.provenance), r.runs_candidate,
                                FormatEnergy(r.mean_candidate_uj, r.provenance), r.domain,
                                ProvenanceHeading(r.provenance));
  out += fmt::format("limit: {:+.1f}% at {:.0f}% confidence; in root causes A is the baseline, B the candidate\n",
                     100 * options.max_regression, 100 * options.confidence);
  for (const GateCheck& c : r.checks) {
    out += fmt::format("  [{}] {}: ratio {:.3f} {}{} — {}\n", GateCheckStateName(c.state), c.name, c.ratio,
                       IntervalText(c), c.method.empty() ? "" : " (" + c.method + ")", c.message);
    if (!c.root_cause.empty()) out += "      root cause: " + c.root_cause + "\n";
  }
  if (!r.regions_note.empty()) out += "  " + r.regions_note + "\n";
  return out;
}

std::string GateMarkdown(const GateResult& r, const GateOptions& options) {
  std::string out = fmt::format("## Energy gate: {}\n\n", r.failed() ? "❌ regression" : "✅ pass");
  out += fmt::format("Baseline: {} run(s), mean job {}. Candidate: {} run(s), mean job {}. Domain `{}`, {}. Limit "
                     "{:+.1f}% at {:.0f}% confidence.\n\n",
                     r.runs_baseline, FormatEnergy(r.mean_baseline_uj, r.provenance), r.runs_candidate,
                     FormatEnergy(r.mean_candidate_uj, r.provenance), r.domain, ProvenanceHeading(r.provenance),
                     100 * options.max_regression, 100 * options.confidence);
  out += "| check | state | candidate / baseline | interval | detail |\n|---|---|---|---|---|\n";
  for (const GateCheck& c : r.checks) {
    out += fmt::format("| {} | {} | {:.3f} | {} | {}{} |\n", MdCell(c.name), GateCheckStateName(c.state), c.ratio,
                       IntervalText(c), MdCell(c.message),
                       c.root_cause.empty() ? "" : "<br>root cause: " + MdCell(c.root_cause));
  }
  if (!r.regions_note.empty()) out += "\n" + r.regions_note + "\n";
  return out;
}

std::string GateJUnit(const GateResult& r, const GateOptions& options) {
  size_t failures = 0;
  for (const GateCheck& c : r.checks) failures += c.state == GateCheckState::kFail;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuite name=\"magneton.gate\" tests=\"{}\" failures=\"{}\">\n", r.checks.size(), failures);
  for (const GateCheck& c : r.checks) {
    out += fmt::format("  <testcase classname=\"magneton.gate\" name=\"{}\">\n", XmlEscape(c.name));
    const std::string text = XmlEscape(c.message + (c.root_cause.empty() ? "" : "; root cause: " + c.root_cause));
    if (c.state == GateCheckState::kFail) {
      out += fmt::format("    <failure message=\"{}\">ratio {:.3f} {} (limit {:+.1f}%)</failure>\n", text, c.ratio,
                         XmlEscape(IntervalText(c)), 100 * options.max_regression);
    } else {
      out += "    <system-out>" + text + "</system-out>\n";
    }
    out += "  </testcase>\n";
  }
  out += "</testsuite>\n";
  return out;
}

}  // namespace magneton::analysis
