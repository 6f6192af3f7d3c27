// The diff's line-level step (docs/DIFF.md): re-run both recorded commands
// with the deviation-point function traced line by line, and analyse where
// they part ways.
#pragma once

#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "diagnose/line_diagnosis.h"
#include "magneton/analysis.h"
#include "magneton/process_runner.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// Re-runs A's and B's commands (meta command_line and cwd) through `runner`
// with the function of `deviation` and its callers on the recorded path
// traced; side files go next to `work_prefix` (an absolute path). A trace
// that is not trusted under `policy` (analysis/rerun_authority.h) is not run.
// `roots`: where the traced functions' source may be read.
StatusOr<diagnose::LineDiagnosis> RunLineDiagnosis(const Trace& a, const Trace& b,
                                                   const diagnose::DeviationPoint& deviation,
                                                   const std::string& work_prefix, ProcessRunner& runner,
                                                   const RerunPolicy& policy, const diagnose::SourceRoots& roots);

// Which diagnosis the line-level step explains: the flagged findings (waste,
// trade-off) first, in rank order, and an inconclusive or equal one only when
// no flagged finding has a deviation point; within that tier, the first whose
// paths branch inside one function, else the first with a deviation point.
// Null when none has one.
diagnose::Diagnosis* ChooseLineTraceTarget(std::vector<diagnose::Diagnosis>& diagnoses,
                                           const std::vector<detect::Finding>& findings);

}  // namespace magneton::analysis
