// The diff's line-level step (docs/DIFF.md): re-run both recorded commands
// with the deviation-point function traced line by line, and analyse where
// they part ways.
#pragma once

#include <string>

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
StatusOr<diagnose::LineDiagnosis> RunLineDiagnosis(const Trace& a, const Trace& b,
                                                   const diagnose::DeviationPoint& deviation,
                                                   const std::string& work_prefix, ProcessRunner& runner,
                                                   const RerunPolicy& policy);

}  // namespace magneton::analysis
