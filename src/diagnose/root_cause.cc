// The structured root cause of a finding (issue 13, docs/REPORT_FORMAT.md
// "RootCause"): one kind, the name of the thing to change, both sides'
// values and the line to change. The rules of root_cause_rules.h propose
// causes with the strength of their evidence; the strongest is the cause and
// the others are its runners-up.
#include <fmt/format.h>

#include "diagnose/diagnose.h"
#include "diagnose/line_diagnosis.h"
#include "diagnose/region_name.h"
#include "diagnose/root_cause_rules.h"

namespace magneton::diagnose {

RootCause ChooseRootCause(const Diagnosis& d) {
  std::vector<RootCause> proposals = ProposeCauses(d);
  return proposals.empty() ? RootCause{} : std::move(proposals.front());
}

std::string RootCauseLine(const RootCause& c) {
  if (!c.found()) return "root cause: not established (no recorded state, setting or op contrast explains it)";
  std::string s = fmt::format("root cause: {} `{}`", RootCauseKindName(c.kind), c.name);
  if (!c.value_a.empty() || !c.value_b.empty()) s += fmt::format(" (A: {}, B: {})", c.value_a, c.value_b);
  if (!c.where.empty()) s += " at " + c.where;
  if (!c.evidence.empty()) s += " — " + c.evidence;
  return ShortPathsIn(s);
}

std::string CauseStrengthLine(const Diagnosis& d, size_t max_alternatives) {
  if (!d.root_cause.found()) return "";
  std::string s = fmt::format("strength: {}", CauseStrengthName(d.root_cause.strength));
  for (size_t i = 0; i < d.cause_alternatives.size() && i < max_alternatives; ++i) {
    const RootCause& c = d.cause_alternatives[i];
    s += fmt::format("{}{} `{}` ({})", i ? ", " : "; runners-up: ", RootCauseKindName(c.kind), c.name,
                     CauseStrengthName(c.strength));
  }
  if (d.cause_alternatives.size() > max_alternatives) {
    s += fmt::format(", {} more", d.cause_alternatives.size() - max_alternatives);
  }
  return ShortPathsIn(s);
}

void FinishDiagnosis(Diagnosis* d) {
  std::vector<RootCause> proposals = ProposeCauses(*d);
  d->root_cause = proposals.empty() ? RootCause{} : proposals.front();
  d->cause_alternatives.assign(proposals.begin() + (proposals.empty() ? 0 : 1), proposals.end());
  const RootCause& c = d->root_cause;
  const char cheap = d->costly_side == 'B' ? 'A' : 'B';
  std::string s = d->situation;
  if (c.found()) {
    s += fmt::format(". Root cause ({}): `{}`", RootCauseKindName(c.kind), c.name);
    if (!c.value_a.empty() || !c.value_b.empty()) s += fmt::format(" (A: {}, B: {})", c.value_a, c.value_b);
    if (!c.where.empty()) s += " at " + c.where;
    s += fmt::format("; {}. Do as {} does.", c.evidence, cheap);
  } else if (d->deviation.found) {
    s += fmt::format(". No recorded config entry or runtime state explains it; the call paths diverge at {}: check "
                     "the branch there.",
                     d->deviation.frame_a);
  } else {
    s += ". No recorded config entry or runtime state explains it.";
  }
  if (d->line && d->line->found) s += LineSentence(*d->line);
  d->sentence = std::move(s);
}

}  // namespace magneton::diagnose
