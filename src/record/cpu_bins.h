// A background thread's CPU time, as intervals on the wall clock: what the
// recorder writes for its fingerprint thread (fingerprint_worker.h). That
// thread runs in the idle scheduling class and is preempted whenever another
// thread wants its core, so the wall time of its work says little of when it
// ran; its CPU time does. Each job's CPU time is put in the bin of kBinNs of
// wall time in which the job ended, and a bin is written as one interval of
// its CPU time that ends where its last job ended: the energy attribution
// then charges the recorder for about the right time (within a bin; energy
// samples are 5 ms apart) and never for time the thread spent preempted.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace magneton::record {

class CpuBins {
 public:
  static constexpr int64_t kBinNs = 1'000'000;
  // write(start_ns, end_ns, at_stop): one interval; at_stop when it lies
  // after at_stop_from_ns (split there when it straddles it).
  using Write = std::function<void(int64_t start_ns, int64_t end_ns, bool at_stop)>;
  explicit CpuBins(Write write) : write_(std::move(write)) {}

  // A job that ended at end_ns after using cpu_ns of this thread's CPU.
  void Add(int64_t end_ns, int64_t cpu_ns, int64_t at_stop_from_ns);
  // Writes the open bin (the thread goes idle, or ends).
  void Flush(int64_t at_stop_from_ns);

 private:
  Write write_;
  int64_t bin_ = -1;        // the open bin's index (end_ns / kBinNs); -1: none
  int64_t bin_cpu_ns_ = 0;  // CPU time of its jobs
  int64_t bin_end_ns_ = 0;  // where its last job ended
  int64_t written_end_ns_ = 0;  // the last interval's end: intervals never overlap
};

}  // namespace magneton::record
