// Pieces of a Chrome trace-event JSON document (loads in ui.perfetto.dev and
// chrome://tracing) that the single-run export (chrome_export.cc) and the
// two-run diff export (perfetto_diff.cc) share: one trace's ops as slices per
// thread, and its energy as counter tracks per domain.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "magneton/trace.h"

namespace magneton::report {

// A trace-event timestamp: microseconds (fractional nanoseconds kept) after
// `origin_ns` on the trace's monotonic clock.
double TraceEventUs(int64_t t_ns, int64_t origin_ns);

// The earliest instant an export draws of `trace` (its first op or energy
// sample); `fallback_ns` when it has neither.
int64_t EarliestEventNs(const Trace& trace, int64_t fallback_ns);

// "process_name" (and "process_sort_index", which chrome://tracing orders processes by;
// Perfetto orders them itself).
void AppendProcessName(int64_t pid, const std::string& name, int sort_index, nlohmann::json& events);
// "thread_name" (and "thread_sort_index" when given).
void AppendThreadName(int64_t pid, int64_t tid, const std::string& name, nlohmann::json& events);
void AppendThreadSortIndex(int64_t pid, int64_t tid, int sort_index, nlohmann::json& events);

// Every op as a complete ("X") slice on its thread, with its scope, arguments,
// innermost frame and, per energy domain the trace's samples can attribute,
// the op's attributed energy with its provenance; then a name per thread.
// Returns the largest thread id used (0 for none), so callers can place
// tracks of their own past it.
int64_t AppendOpSlices(const Trace& trace, int64_t pid, int64_t origin_ns, nlohmann::json& events);

// Power and cumulative energy as counter ("C") tracks, one pair per energy
// domain and provenance, built from the trace's own energy samples (counter
// deltas over time, or the power a power-only meter read). Each track's name
// says whether its figures are measured or estimated. Returns one JSON object
// per domain drawn (domain, provenance, meter, samples, skipped intervals and
// the track names) for the document's metadata; a domain whose samples give
// no interval is listed with its reason.
nlohmann::json AppendEnergyCounters(const Trace& trace, int64_t pid, int64_t origin_ns, nlohmann::json& events);

}  // namespace magneton::report
