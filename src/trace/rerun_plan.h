// The re-run plan a trace stores (meta row `rerun.plan`): what a re-run of the
// recorded program executes — argv, working directory, environment changes,
// interpreter — as one canonical JSON text, written at record time and covered
// whole by the trace's signature (trust/trace_trust.h). Every re-run (the
// line-level step, --confirm and its controls) is built from this row only,
// never from the display string `command_line` (docs/TRACE_FORMAT.md, "Re-run
// plan"; docs/DIFF.md, "Which traces are re-run").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "magneton/process_runner.h"
#include "magneton/status.h"
#include "magneton/trace.h"
#include "trace/shell_quote.h"  // ShellQuoteArgv, for the plan's display

namespace magneton {

inline constexpr const char* kRerunPlanKey = "rerun.plan";

// {"argv":[...],"cwd":"...","env":{...},"interpreter":"...","version":1}: keys
// sorted, no spaces, so that equal plans are equal bytes.
std::string EncodeRunPlan(const RunPlan& plan);

// The plan in `text`, which must be exactly EncodeRunPlan of it (anything else
// — extra keys, other spacing, duplicate keys, a missing argv, an environment
// name that is not NAME-shaped, a NUL byte — is refused, so that the bytes
// the signature covers are the only reading of the plan). The recorder reads
// the plan its caller passed with require_canonical = false and stores it
// re-encoded.
StatusOr<RunPlan> DecodeRunPlan(std::string_view text, bool require_canonical = true);

// The trace's stored plan: NotFound for a trace recorded before re-run plans
// (no row), InvalidArgument for a malformed row.
StatusOr<RunPlan> StoredRunPlan(const RunMetadata& meta);

// Whether any part of the plan (an argv element, the working directory, an
// environment value) holds the redaction mark: such a plan cannot reproduce
// the run and is never re-run.
bool PlanHoldsRedaction(const RunPlan& plan);

// "cd <cwd> && NAME=value ... <argv>": the plan as a line the user can run.
std::string DescribeRunPlan(const RunPlan& plan);

}  // namespace magneton
