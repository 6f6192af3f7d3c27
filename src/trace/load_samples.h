// How busy the machine was, sampled through a recording (trace meta
// machine.load_samples, docs/TRACE_FORMAT.md): the all-CPU line of
// /proc/stat and the recorded process's own CPU time, on the ops' clock. The
// diff takes the load over the job (first op to last op), not over the whole
// recording: interpreter start-up and imports can be most of a recording,
// and a neighbour busy only during the job was diluted by them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/status.h"

namespace magneton {

struct LoadSample {
  int64_t t_ns = 0;         // MonotonicNowNs, the ops' clock
  uint64_t busy = 0;        // /proc/stat ticks: user + nice + system + irq + softirq
  uint64_t steal = 0;       // ticks the hypervisor took
  uint64_t total = 0;       // every tick but guest and guest_nice
  int64_t own_cpu_ns = 0;   // the recorded process's CPU time
};

struct LoadSeries {
  long ticks_per_second = 0;  // USER_HZ
  std::vector<LoadSample> samples;  // by t_ns
};

struct LoadShares {
  double others_cpu_share = 0;  // other processes' busy time / all CPU time, in [0, 1]
  double steal_share = 0;       // steal / all CPU time, in [0, 1]
  uint64_t total_ticks = 0;     // all CPUs' ticks in the span
};

// "<ticks_per_second>;<t_ns>,<busy>,<steal>,<total>,<own_cpu_ns>;..."
std::string EncodeLoadSeries(const LoadSeries& series);
StatusOr<LoadSeries> DecodeLoadSeries(std::string_view text);

// Between two samples. Fails when the span holds under 10 ticks of all CPUs
// together (too short to say anything) or the counters went backwards.
StatusOr<LoadShares> LoadSharesBetween(const LoadSample& start, const LoadSample& end, long ticks_per_second);

// Over [start_ns, end_ns], widened to the samples that enclose it (the last
// one at or before start_ns, the first at or after end_ns; the series' ends
// where it does not reach).
StatusOr<LoadShares> LoadOver(const LoadSeries& series, int64_t start_ns, int64_t end_ns);

// Keeps a series within `max_samples` (at least 3) by dropping every other
// sample but the first and last: a long recording keeps a coarser series,
// and its job is as long.
void ThinLoadSeries(LoadSeries& series, size_t max_samples);

}  // namespace magneton
