// Device activities linked to the recorded ops that launched them, on the
// op clock: what the trace's device_activities table holds.
//
// An activity's correlation id names the runtime/driver call that launched
// it; that call's external id names the source's host op that was open
// innermost on the launching thread (Kineto pushes one per op it sees). That
// host op is paired with the recorded op of the same RecordFunction
// (gpu/clock_align.h), so the activity is charged to the innermost recorded
// op open at the launch. When the source's innermost op is not one the
// recorder kept, or the launch has no external id, the launch's own time on
// its thread decides: the innermost recorded op open then. A recorded op
// the source never saw, nested in the source's innermost one and holding the
// whole launch call, is charged instead (the recorder's CUDA graph replay op around a
// cudaGraphLaunch: Kineto does not see it). Device work a CUDA graph ran
// also gets the captured op that created its node (gpu/graph_link.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/activity.h"
#include "gpu/clock_align.h"
#include "gpu/graph_link.h"
#include "magneton/status.h"
#include "magneton/trace.h"
#include "trace/op_spans.h"

namespace magneton::gpu {

struct LinkedActivity {
  DeviceActivity row;  // name_id unset: the caller interns `name`
  std::string name;
};

struct LinkStats {
  std::string source;
  size_t activities = 0;
  size_t by_host_op = 0;      // through the launch's external id and its paired host op
  size_t by_launch_time = 0;  // through the launch's time on its thread
  size_t unlinked = 0;        // no recorded op found (all the reasons below)
  size_t no_launch = 0;       // no launch with the activity's correlation id in the batch
  size_t launch_outside_ops = 0;  // the launch ran while no recorded op was open on its thread
  std::map<std::string, int64_t> dropped;  // the batch's malformed events
  ClockMapping clock;
  GraphLinkStats graphs;  // CUDA graphs (gpu/graph_link.h)
};

struct LinkResult {
  std::vector<LinkedActivity> activities;  // by start, then device and stream
  LinkStats stats;
};

StatusOr<LinkResult> LinkActivities(const ActivityBatch& batch, const std::vector<OpSpan>& ops,
                                    const AlignOptions& options = {});

}  // namespace magneton::gpu
