// The on-disk schema of a .mtrace file (documented in docs/TRACE_FORMAT.md).
#pragma once

namespace magneton::schema {

// Written into meta('format') so that an unrelated SQLite file is refused.
inline constexpr const char* kFormatName = "magneton-trace";

// All tables, created in one transaction when a trace is created.
extern const char* const kCreateTables;

}  // namespace magneton::schema
