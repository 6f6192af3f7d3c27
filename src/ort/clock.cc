// Mapping ORT profile timestamps onto CLOCK_MONOTONIC (the op clock): the
// realtime-monotonic offset, read the one way every ingest reads it.
#include "base/clock.h"
#include "ort/ort.h"

namespace magneton::ort {

ClockOffset MeasureClockOffset() {
  const RealtimeOffset o = MeasureRealtimeOffset();
  return {o.realtime_minus_monotonic_ns, o.uncertainty_ns};
}

}  // namespace magneton::ort
