// This user's trust key: 32 random bytes, hex, in a file only its owner can
// read (like Jupyter's notebook signature secret). It never goes into a trace;
// a trace carries only an HMAC made with it (trust/trace_trust.h).
#pragma once

#include <string>

#include "magneton/status.h"

namespace magneton::trust {

// ${XDG_CONFIG_HOME:-$HOME/.config}/magneton/trust.key (a relative
// XDG_CONFIG_HOME is ignored, as the XDG spec says); "" when this user has no
// home directory.
std::string DefaultKeyPath();

// The key's 32 bytes. Refused (never used) when the file is missing
// (NotFound), a symbolic link, not a regular file, owned by another user or
// readable or writable by group or others (PermissionDenied, with the chmod
// to fix it), or not 64 hex digits (Corrupt).
StatusOr<std::string> LoadKey(const std::string& path);

// LoadKey, creating the key (mode 0600, its folder 0700) when it does not
// exist yet. Concurrent first uses agree on one key: it is written to a
// private temporary file and linked into place, so a reader never sees half
// of it.
StatusOr<std::string> LoadOrCreateKey(const std::string& path);

}  // namespace magneton::trust
