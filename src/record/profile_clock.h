// What the profiler ingesters of compiled programs share (xla_profile.cc for
// JAX jit, tf_profile.cc for tf.function graphs): reading Chrome trace-event
// JSON, finding the offset between a profiler's clock and the op clock by
// pairing the profiler's call events with the recorded call ops by their
// ends, and laying a call's inner events inside its recorded op.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "magneton/status.h"

namespace magneton {

// A finite number at e[key].
bool TraceEventNumber(const nlohmann::json& e, const char* key, double* out);
// A string (or an integer, as text) at args[key]; "" when neither.
std::string TraceEventText(const nlohmann::json& args, const char* key);
// The "traceEvents" array of a trace-event document (or the document itself
// when it is an array); nullptr when it has none.
const nlohmann::json* TraceEventsOf(const nlohmann::json& root);

// A complete event ("ph": "X") with a string name: the name, and its args
// (an empty object when it has none). False for any other event.
struct CompleteEvent {
  const std::string* name = nullptr;
  const nlohmann::json* args = nullptr;
};
bool AsCompleteEvent(const nlohmann::json& e, CompleteEvent* out);
// A complete event's span on the profiler clock (µs in the file, ns here) and
// its thread; false when it has no time (no finite ts or dur, or dur < 0).
bool CompleteEventSpan(const nlohmann::json& e, int64_t* start_ns, int64_t* end_ns, int64_t* thread_id);

struct ProfileClock {
  int64_t offset_ns = 0;  // op clock = profiler clock - offset
  int64_t paired = 0;     // calls whose end met a recorded op's end within the tolerance
};

// profiler_ends[name]: the ends of the profiler's calls of a recorded op
// name; recorded_ends[name]: the ends of the recorded ops of that name
// (sorted here). The offset that pairs the most ends within `tolerance_ns`
// (each pair weighed by closeness, so that of two offsets pairing as many
// calls the one whose ends agree wins), refined to the median difference of its pairs. The recorded op and the
// profiler's call end within µs of each other (the op returns right after
// the call), while their starts differ by the engine's own dispatch.
StatusOr<ProfileClock> PairClockByEnds(const std::map<std::string, std::vector<int64_t>>& profiler_ends,
                                       std::map<std::string, std::vector<int64_t>> recorded_ends,
                                       int64_t tolerance_ns);

// Events of one call (start, end on the profiler clock, sorted by start)
// placed inside their recorded op [op_start, op_end]: moved onto the op
// clock, shifted so that the first and last fit in the op (the clock is good
// to tens of µs, the op waited for them all), durations kept; events the
// engine ran side by side on several threads are laid one after the other,
// so that the exclusive times of the op's children add up.
std::vector<std::pair<int64_t, int64_t>> LayInside(const std::vector<std::pair<int64_t, int64_t>>& events,
                                                   int64_t offset_ns, int64_t op_start_ns, int64_t op_end_ns);

}  // namespace magneton
