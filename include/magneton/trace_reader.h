// Loads a .mtrace file into memory, validating it. A truncated, corrupted,
// foreign or wrong-version file yields a Status with one clear line.
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

StatusOr<Trace> ReadTrace(const std::string& path);

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
