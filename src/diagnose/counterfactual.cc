#include "diagnose/counterfactual.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/format.h"
#include "diagnose/line_diagnosis.h"
#include "diagnose/override_rules.h"
#include "energy/attribution.h"
#include "trace/redact.h"

namespace magneton::diagnose {

StatusOr<Counterfactual> PlanCounterfactual(const Trace& a, const Trace& b, const detect::DetectResult& result,
                                            const std::vector<Diagnosis>& diagnoses) {
  // The finding whose cause the line-level re-run established comes first
  // (its top candidate is that cause), then the top waste finding.
  std::vector<const Diagnosis*> order;
  for (const Diagnosis& d : diagnoses) {
    if (d.line && d.line->found && !d.line->config_key.empty()) order.push_back(&d);
  }
  for (const Diagnosis& d : diagnoses) order.push_back(&d);
  for (const Diagnosis* dp : order) {
    const Diagnosis& d = *dp;
    if (d.finding_index >= result.findings.size()) continue;
    const detect::Finding& f = result.findings[d.finding_index];
    const bool line_cause = d.line && d.line->found && !d.line->config_key.empty();
    if ((f.verdict != detect::Verdict::kWaste && !(line_cause && f.verdict == detect::Verdict::kTradeOff)) ||
        d.candidates.empty()) {
      continue;
    }
    Counterfactual plan;
    plan.finding_index = d.finding_index;
    plan.rerun_side = f.wasteful_side == 'B' ? 'B' : 'A';
    plan.variable = d.candidates.front().config;
    const bool rerun_a = plan.rerun_side == 'A';
    plan.new_value = rerun_a ? plan.variable.value_b : plan.variable.value_a;
    if (plan.new_value == "<absent>") {
      return FailedPrecondition("the efficient run has no value for " + plan.variable.key + " to set");
    }
    if (plan.new_value == kRedacted) {
      return FailedPrecondition("the efficient run's value of " + plan.variable.key +
                                " looks secret, so its trace does not hold it (docs/TRACE_FORMAT.md)");
    }
    // Both the variable and the value are trace data: only what the rules
    // validate is flipped; anything else is printed for the user to run.
    const std::string& old_value = rerun_a ? plan.variable.value_a : plan.variable.value_b;
    if (Status valid = ValidateFlip(plan.variable.key, plan.variable.source, old_value, plan.new_value); !valid.ok()) {
      plan.refused = valid.message();
    }
    return plan;
  }
  return NotFound("no waste finding with a candidate variable to flip");
}

StatusOr<CounterfactualOutcome> EvaluateCounterfactual(const Counterfactual& plan,
                                                       const std::vector<const Trace*>& controls,
                                                       const std::vector<const Trace*>& flipped,
                                                       const std::string& domain, double min_saving) {
  if (controls.empty() || flipped.empty()) return InvalidArgument("no re-runs to compare");
  CounterfactualOutcome out;
  out.domain = domain;
  out.runs = std::min(controls.size(), flipped.size());
  bool first = true;
  // The job (first op to last op), as the diff compares it: start-up and
  // imports are not what the flipped variable changes.
  auto lowest = [&](const std::vector<const Trace*>& runs, double* uj) -> Status {
    *uj = std::numeric_limits<double>::infinity();
    for (const Trace* t : runs) {
      if (t->energy_samples.empty()) {
        return FailedPrecondition("a re-run has no energy samples (recorded with MAGNETON_ENERGY=0?)");
      }
      MAGNETON_ASSIGN_OR_RETURN(energy::Attribution e, energy::AttributeEnergy(*t, out.domain));
      if (!first && e.provenance != out.provenance) {
        return FailedPrecondition("the re-runs' energy has different provenance");
      }
      out.provenance = e.provenance;
      first = false;
      *uj = std::min(*uj, e.job_uj);
    }
    return Status::Ok();
  };
  MAGNETON_RETURN_IF_ERROR(lowest(controls, &out.before_uj));
  MAGNETON_RETURN_IF_ERROR(lowest(flipped, &out.after_uj));
  const char* prov = ProvenanceName(out.provenance);
  double saved = out.before_uj - out.after_uj;
  double share = out.before_uj > 0 ? saved / out.before_uj : 0;
  out.confirmed = share >= min_saving;
  const std::string var = fmt::format("`{}` = {}", plan.variable.key, plan.new_value);
  const std::string basis = fmt::format("the lowest of {} interleaved re-run(s) each, with and without the change; {}, {}",
                                        out.runs, prov, out.domain);
  if (out.confirmed) {
    out.sentence = fmt::format("Confirmed: re-running {} with {} used {:.2f} J instead of {:.2f} J ({}): {:.2f} J saved, "
                               "{:.1f}% of the job.",
                               plan.rerun_side, var, out.after_uj / 1e6, out.before_uj / 1e6, basis, saved / 1e6,
                               100 * share);
  } else {
    out.sentence = fmt::format("Not confirmed: re-running {} with {} used {:.2f} J vs {:.2f} J ({}): {:.1f}% change, "
                               "below the {:.0f}% needed; the cause is elsewhere or the override did not take effect.",
                               plan.rerun_side, var, out.after_uj / 1e6, out.before_uj / 1e6, basis, 100 * share,
                               100 * min_saving);
  }
  return out;
}

}  // namespace magneton::diagnose
