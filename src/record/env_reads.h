// The environment variable names native code has read in this process, as
// noted by libmagneton_getenv.so when `magneton record` preloaded it
// (src/envread/). Without the interposer there is nothing to ask, and the
// Python glue falls back to a list of name prefixes (docs/TRACE_FORMAT.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace magneton {

struct EnvNamesRead {
  std::vector<std::string> names;  // sorted, each once
  int64_t dropped = 0;             // reads the interposer could not note (long names, full table)
};

// nullopt when the interposer is not loaded.
std::optional<EnvNamesRead> NativeEnvNamesRead();

}  // namespace magneton
