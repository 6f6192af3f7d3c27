// Reading sysfs attributes under an overridable root, with errors that say
// what to do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "energy/energy.h"
#include "magneton/status.h"

namespace magneton::energy {

// The prefix for /sys: the option if given, else $MAGNETON_SYSFS_ROOT, else "".
std::string SysfsRoot(const std::optional<std::string>& option);

// Reads a whole small file; errno becomes a Status (EACCES/EPERM:
// kPermissionDenied, ENOENT: kNotFound, others: kUnavailable).
StatusOr<std::string> ReadSmallFile(const std::string& path);

// `read_file` if set, else ReadSmallFile.
StatusOr<std::string> ReadWith(const ReadFileFn& read_file, const std::string& path);

// Parses a decimal integer, ignoring surrounding whitespace.
StatusOr<uint64_t> ParseUint(const std::string& text, const std::string& what);

// The first line, trimmed.
std::string Trim(const std::string& text);

// A best-effort hint for unavailable-hardware messages: " (this looks like a
// virtual machine: ...)" or "".
std::string VirtualMachineHint();

}  // namespace magneton::energy
