// `magneton export --perfetto-diff a.mtrace b.mtrace`: both runs and their
// diff in one Chrome trace-event JSON document (loads in ui.perfetto.dev).
// Run A and run B are two processes on one time axis, each run's job start
// (its first op) at the same instant; each process has its ops as slices per
// thread, its energy as counter tracks, and a "regions" track with the diff's
// matched regions, each carrying its finding (verdict, energy per side with
// provenance, ratio and interval, root cause). A flow arrow joins every
// matched region on A to its partner on B. docs/REPORT_FORMAT.md.
#pragma once

#include <ostream>

#include "magneton/status.h"
#include "report/diff_report.h"

namespace magneton::report {

// The first op's start, recorder ops left out (the job that detection
// compares); the recording's start when there is no op.
int64_t JobStartNs(const Trace& trace);

// Needs in.a, in.b and in.result (the diff's detection); diagnoses give the
// root causes where there are.
Status WritePerfettoDiff(const DiffReportInput& in, std::ostream& out);

}  // namespace magneton::report
