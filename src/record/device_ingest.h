// Device activity into the active recording: collected from a source
// (torch.profiler's Kineto trace at stop, a scripted fake in tests), put on
// the op clock and linked to the ops recorded so far (gpu/link.h), written
// as device_activities rows, with what happened in meta (gpu.*;
// docs/TRACE_FORMAT.md "Device activities").
#pragma once

#include <cstdint>

#include "base/clock.h"
#include "gpu/activity.h"
#include "gpu/link.h"
#include "magneton/recorder.h"
#include "magneton/status.h"

namespace magneton {

// The clock readings taken right before the source started and right after
// it stopped (MeasureRealtimeOffset): the realtime prior of the mapping.
struct DeviceClockBracket {
  bool known = false;
  RealtimeOffset start, stop;
};

// The candidates a source's clock is tried against: realtime through the
// bracket (uncertainty: the readings' own plus half the drift between them),
// and the monotonic clock itself.
std::vector<gpu::ClockPrior> PriorsFrom(const DeviceClockBracket& bracket);

// Collects, links and writes. On error nothing is written but meta
// gpu.error (the message), and the error is returned.
StatusOr<gpu::LinkStats> IngestDeviceActivities(Recorder& recorder, gpu::ActivitySource& source,
                                                const DeviceClockBracket& bracket);

}  // namespace magneton
