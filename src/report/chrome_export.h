// Chrome trace-event JSON (loads in the Perfetto UI and chrome://tracing).
#pragma once

#include <ostream>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

Status WriteChromeTrace(const Trace& trace, std::ostream& out);

}  // namespace magneton
