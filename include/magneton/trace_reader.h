// Loads a .mtrace file into memory, validating it. A truncated, corrupted,
// foreign or wrong-version file yields a Status with one clear line.
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

StatusOr<Trace> ReadTrace(const std::string& path);

// What a reader that prints a summary may leave out of a long trace. Off,
// tensors are counted (Trace::tensors_not_read) but not loaded, and op
// arguments are left empty: a summary of a 2.4 M-op trace needs about a
// quarter less memory. The ops, their links and everything else are read and
// checked as by ReadTrace; a link then names a tensor row by its id only.
// A trace of schema version 2 is read whole whatever the options.
struct ReadOptions {
  bool tensors = true;
  bool op_args = true;
};
StatusOr<Trace> ReadTrace(const std::string& path, const ReadOptions& options);

// What a trace holds, counted without loading it: its meta and its rows of
// ops, tensors and device activities (those linked to an op apart). For a
// closing summary or a listing of a trace too large to load; the file is
// opened as untrusted, as by ReadTrace.
struct TraceCounts {
  RunMetadata meta;
  size_t ops = 0;
  size_t tensors = 0;
  size_t device_activities = 0;
  size_t device_activities_linked = 0;
};
StatusOr<TraceCounts> ReadTraceCounts(const std::string& path);

// Like ReadTrace but from bytes in memory (for fuzzing and tests).
StatusOr<Trace> ReadTraceFromBytes(const void* data, size_t size);

}  // namespace magneton
