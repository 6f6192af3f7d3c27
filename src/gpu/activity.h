// Device activity as a source reports it (CUPTI through torch.profiler /
// Kineto, or a scripted fake), before it is put on the op clock and linked to
// the ops that launched it (gpu/link.h). Every timestamp here is on the
// source's own host clock, in ns: Kineto's is not necessarily
// CLOCK_MONOTONIC, so the mapping is measured (gpu/clock_align.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/status.h"

namespace magneton::gpu {

enum class ActivityKind { kKernel, kMemcpy, kMemset };
const char* ActivityKindName(ActivityKind kind);  // "kernel", "memcpy", "memset"

// Work that ran on a device.
struct RawActivity {
  ActivityKind kind = ActivityKind::kKernel;
  std::string name;
  int64_t device = 0;  // CUDA ordinal: "cuda:<device>"
  int64_t stream = 0;
  int64_t start_ns = 0;  // source clock
  int64_t end_ns = 0;
  uint64_t correlation = 0;  // of the runtime/driver call that launched it
  uint64_t external_id = 0;  // the host op open at the launch, as the source numbers it (0: unknown)
  // Work a CUDA graph launch ran (CUPTI's graphId / graphNodeId, Kineto's
  // args "graph id" / "graph node id"): the graph and the node of it that
  // ran. 0: not run by a graph, or a source that does not say.
  int64_t graph_id = 0;
  int64_t graph_node_id = 0;
};

// A runtime or driver API call that launched device work (cudaLaunchKernel,
// cudaMemcpyAsync, cuLaunchKernel): on the host thread that made it.
struct Launch {
  uint64_t correlation = 0;
  uint64_t external_id = 0;  // 0: unknown
  int64_t thread_id = 0;     // OS thread id
  int64_t start_ns = 0;      // source clock
  int64_t end_ns = 0;
  std::string api;
};

// A host op as the source saw it (Kineto's cpu_op / user_annotation): the
// same RecordFunction the recorder saw, numbered by the source. These anchor
// the source's clock to the recorder's and carry the external ids.
struct HostOp {
  uint64_t external_id = 0;
  std::string name;
  int64_t thread_id = 0;
  int64_t start_ns = 0;  // source clock
  int64_t end_ns = 0;
};

// What one collection returned, with everything it could not use counted.
struct ActivityBatch {
  std::string source;  // "kineto", "replay"
  std::vector<RawActivity> activities;
  std::vector<Launch> launches;
  std::vector<HostOp> host_ops;
  // Events of a kind the batch uses but malformed (no timestamp, negative
  // duration, no device): dropped, counted by "<category>.<reason>".
  std::map<std::string, int64_t> dropped;
  // The coarsest timestamp resolution met (ns): Kineto writes microseconds
  // with three decimals, read through a double.
  int64_t timestamp_resolution_ns = 1;
  std::map<std::string, std::string> device_names;  // "cuda:0" -> "NVIDIA H200", where the source says
  // Correlation ids of the launches the source drew a launch-to-device flow
  // from (Kineto's "ac2g" flow starts): the calls it classes as queueing
  // device work. Empty when the source writes no flows.
  std::set<uint64_t> flow_starts;
};

// Where device activity comes from. Collect() returns everything gathered
// since the source started (Kineto: the whole profile, at its stop).
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  virtual std::string_view name() const = 0;
  virtual StatusOr<ActivityBatch> Collect() = 0;
};

}  // namespace magneton::gpu
