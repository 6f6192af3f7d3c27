// Root causes as rules (issue 34): one rule per contrast between the two
// runs. Each reads its own evidence from the diagnosis (gathered once by
// Diagnose: DiffRuntimeStates, ContrastConstructorArgs, RankCandidates,
// ContrastCallArgs, ContrastKernels, ContrastLayouts, FindShapeCause, the op
// sets) and proposes causes, each with a strength. ChooseRootCause runs every
// rule and takes the strongest proposal; the others are the runners-up the
// report lists. A new contrast plugs in as a new rule in RootCauseRules().
#pragma once

#include <vector>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {

// A rule: the causes its contrast supports, strongest first ({} when its
// evidence is absent). Pure: it reads the diagnosis only.
using CauseRule = std::vector<RootCause> (*)(const Diagnosis& d);

struct NamedCauseRule {
  const char* name;  // "runtime_state", "constructor_arg", ...: for tests and docs
  CauseRule propose;
};

// Every rule. Proposals of equal strength rank in this order (then in the
// order a rule gave them): it is the precedence the causes had before they
// were rules (issue 13), so the order within one strength is deliberate.
const std::vector<NamedCauseRule>& RootCauseRules();

// Every rule's proposals, strongest first (stable: ties in rule order), one
// per kind and name (the strongest).
std::vector<RootCause> ProposeCauses(const Diagnosis& d);

// The rules, one per contrast (root_cause_rules.cc).
// A runtime state in effect for the region's ops differs (kDirect).
std::vector<RootCause> RuntimeStateRule(const Diagnosis& d);
// The module the region's ops ran inside was constructed with other arguments (kDirect).
std::vector<RootCause> ConstructorArgRule(const Diagnosis& d);
// A config entry (model config, call argument, env var, version key) that
// the code where the call paths diverge reads (kNamedAtDeviation), or that
// the line trace followed the branch back to (kLineTrace).
std::vector<RootCause> DeviationConfigRule(const Diagnosis& d);
// A keyword the lines that issue the region's ops pass differently (kIssuingPath).
std::vector<RootCause> CallArgRule(const Diagnosis& d);
// The version of a package the region's ops ran inside (kIssuingPath).
std::vector<RootCause> VersionRule(const Diagnosis& d);
// The same op runs other nested ops or kernels (api_choice, kOpContrast).
std::vector<RootCause> KernelRule(const Diagnosis& d);
// The same ops on another dtype, layout or device (kOpContrast).
std::vector<RootCause> LayoutRule(const Diagnosis& d);
// The same ops on larger inputs (kOpContrast).
std::vector<RootCause> DataShapeRule(const Diagnosis& d);
// Different ops issued through the same call: what differs among the config
// entries decides what it runs (kOpSequence).
std::vector<RootCause> SameCallConfigRule(const Diagnosis& d);
// Different ops for the same values: the API the costly side called (api_choice, kOpSequence).
std::vector<RootCause> SubstitutedOpsRule(const Diagnosis& d);
// Extra ops, or more of the same ops: the call or function that issues them (code_path, kOpSequence).
std::vector<RootCause> ExtraWorkRule(const Diagnosis& d);
// A setting that differs and reaches every op (global flag, env, runtime),
// when nothing else points anywhere (kReachesEveryOp).
std::vector<RootCause> ReachesEveryOpRule(const Diagnosis& d);

}  // namespace magneton::diagnose
