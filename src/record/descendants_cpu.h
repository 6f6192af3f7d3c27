// CPU time of the processes a recorded program started: its waited-for
// children and its live descendants (torch.compile's compile workers and the
// C++ compilers they run, DataLoader workers). The machine-load series counts
// it as the job's, not as other processes' (record/machine_load.cc).
#pragma once

#include <cstdint>
#include <string>

namespace magneton::record {

// utime + stime + cutime + cstime of one /proc/<pid>/stat line, in clock
// ticks; -1 when the line does not parse.
int64_t ProcStatTreeTicks(const std::string& stat_line);

// Waited-for children (getrusage RUSAGE_CHILDREN) plus every live descendant
// found through /proc/self/task/*/children, with what each has waited for, in ns.
int64_t DescendantsCpuNs();

}  // namespace magneton::record
