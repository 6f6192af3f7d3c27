// A background thread's CPU time as wall-clock intervals (cpu_bins.h).
#include "record/cpu_bins.h"

#include <algorithm>

namespace magneton::record {

void CpuBins::Add(int64_t end_ns, int64_t cpu_ns, int64_t at_stop_from_ns) {
  const int64_t bin = end_ns / kBinNs;
  if (bin != bin_) Flush(at_stop_from_ns);
  bin_ = bin;
  bin_cpu_ns_ += std::max<int64_t>(cpu_ns, 0);
  bin_end_ns_ = std::max(bin_end_ns_, end_ns);
}

void CpuBins::Flush(int64_t at_stop_from_ns) {
  if (bin_ < 0) return;
  const int64_t end = bin_end_ns_;
  const int64_t start = std::max(end - bin_cpu_ns_, written_end_ns_);
  bin_ = -1;
  bin_cpu_ns_ = 0;
  if (start >= end) return;
  written_end_ns_ = end;
  if (start < at_stop_from_ns) write_(start, std::min(end, at_stop_from_ns), false);
  if (end > at_stop_from_ns) write_(std::max(start, at_stop_from_ns), end, true);
}

}  // namespace magneton::record
