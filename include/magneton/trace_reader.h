// Loads a .mtrace file into memory, validating it. A truncated, corrupted,
// foreign or wrong-version file yields a Status with one clear line.
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

StatusOr<Trace> ReadTrace(const std::string& path);

// Like ReadTrace but from bytes in memory (for fuzzing and tests).
StatusOr<Trace> ReadTraceFromBytes(const void* data, size_t size);

}  // namespace magneton
