// Whether a trace may make the analysis start the command it names.
#pragma once

#include <string>

#include "magneton/analysis.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// Ok when the command of `trace` (read from `path`) may be run under `policy`;
// otherwise why not, with the exact command, for the user.
Status AuthorizeRerun(const Trace& trace, const std::string& path, const RerunPolicy& policy);

}  // namespace magneton::analysis
