// Putting a device-activity source's timestamps on the op clock
// (CLOCK_MONOTONIC). The source's host clock is not assumed: Kineto has
// stamped with the realtime clock, with a TSC converted to it, and with a
// monotonic clock across versions. The source's host ops are the same
// RecordFunctions the recorder saw, stamped by the other callback of the same
// call, so the offset is measured on them: the offset that lines up the most
// host ops with recorded ops of the same name on the same thread, refined to
// the median residual. Clock readings taken around the profile (a bracket,
// like the ONNX Runtime mapping) are candidates and the fallback when the
// source gave no host ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/activity.h"
#include "magneton/status.h"
#include "trace/op_spans.h"

namespace magneton::gpu {

// A candidate offset (source clock − CLOCK_MONOTONIC) known in advance: the
// realtime−monotonic offset read around the profile, or 0 for a source on
// the monotonic clock.
struct ClockPrior {
  std::string name;  // "realtime_bracket", "monotonic"
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;  // bound on |offset − truth| from the readings alone
};

struct AlignOptions {
  std::vector<ClockPrior> priors;
  // How far apart the two callbacks of one RecordFunction may stamp it:
  // both run back to back inside the call, so microseconds; 50 µs leaves
  // room for a preempted callback without pairing neighbouring ops.
  int64_t pair_tolerance_ns = 50'000;
  // A prior wins over a data-only candidate unless that one pairs clearly
  // more host ops: repeated layers can line up shifted by one layer.
  double prior_preference = 0.9;
};

struct ClockMapping {
  // op clock = source clock − offset_ns.
  int64_t offset_ns = 0;
  // "host_ops" (measured on paired ops), "<prior name>" (no host op paired:
  // the prior alone).
  std::string method;
  // Bound on |mapped − true| of a host timestamp: the 95th percentile of
  // the paired host ops' |residual| after the fit, at their starts and their
  // ends (their two callbacks' separation included; the largest one below 20
  // pairs), else the prior's uncertainty; plus the timestamp resolution.
  int64_t error_ns = 0;
  size_t host_ops = 0;  // the source's host ops
  size_t paired = 0;    // of them, paired with a recorded op at the final offset
  int64_t residual_p50_ns = 0;  // |residual| over both stamps of the paired ops
  int64_t residual_p95_ns = 0;
  int64_t residual_max_ns = 0;
  std::string prior_used;  // the prior the fit started from, "" for a data-only candidate
};

// Fails (FailedPrecondition) when nothing places the source on the op clock:
// no host op pairs with a recorded op and no prior was given.
StatusOr<ClockMapping> AlignClocks(const ActivityBatch& batch, const std::vector<OpSpan>& ops,
                                   const AlignOptions& options);

// For each of the batch's host ops, the index into `ops` of the recorded op
// it pairs with at `offset_ns` (same thread and name, nearest start within
// the tolerance), or -1.
std::vector<int64_t> PairHostOps(const ActivityBatch& batch, const std::vector<OpSpan>& ops, int64_t offset_ns,
                                 int64_t tolerance_ns);

}  // namespace magneton::gpu
