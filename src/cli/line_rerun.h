// `magneton diff`'s line-level step (docs/DIFF.md): re-run both recorded
// commands with the deviation-point function traced line by line, and
// analyse where they part ways.
#pragma once

#include <string>

#include "magneton/diagnose.h"
#include "magneton/line_diagnosis.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::cli {

// Re-runs A's and B's commands (meta command_line and cwd) with the function
// of `deviation` and its callers on the recorded path traced; side files go
// next to `work_prefix` (an absolute path). A trace this user did not record
// on this machine (trust/trace_trust.h) is re-run only with rerun_untrusted.
StatusOr<diagnose::LineDiagnosis> RunLineDiagnosis(const Trace& a, const Trace& b,
                                                   const diagnose::DeviationPoint& deviation,
                                                   const std::string& work_prefix, bool rerun_untrusted);

}  // namespace magneton::cli
