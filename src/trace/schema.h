// The on-disk schema of a .mtrace file, described once (docs/TRACE_FORMAT.md).
// CREATE TABLE, INSERT and SELECT statements are all generated from this
// description, so the writer, the reader and every table's own I/O agree on
// the columns and their order: code binds and reads columns by position in
// the order listed here.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace magneton::schema {

// Written into meta('format') so that an unrelated SQLite file is refused.
inline constexpr const char* kFormatName = "magneton-trace";

struct Column {
  const char* name;
  const char* type;  // SQL type and constraints
  // A column added after traces were first written without it: what a
  // reader selects in its place from such an older file (SQL, "NULL").
  // Null for columns every trace has.
  const char* absent_default = nullptr;
};

enum class TableId {
  kMeta,
  kConfig,
  kStrings,
  kFrames,
  kCallPaths,
  kScopes,
  kOps,
  kTensors,
  kDeviceActivities,
  kEnergySamples,
  kOpReplays,
  kFingerprints,
  kRuntimeStates,
  kStateSetters,
  // Schema version 3: the dictionaries and the compact rows that the ops and
  // tensors views read (docs/TRACE_FORMAT.md).
  kThreads,
  kOpArgs,
  kLayouts,
  kOpRows,
  kTensorRows,
};

struct Table {
  TableId id;
  const char* name;
  std::span<const Column> columns;
  // Added after traces were first written without it: a reader treats an
  // older file that lacks it as having no rows.
  bool may_be_absent = false;
  // A view in version 3 (CREATE VIEW ...), a table in version 2 with the same
  // columns: never inserted into; SelectSql reads either.
  const char* view_sql = nullptr;
};

const Table& GetTable(TableId id);
std::span<const Table> AllTables();

// Every table and view (ops, tensors, op_tensors), for one transaction at creation.
std::string CreateTablesSql();
// "INSERT [OR REPLACE] INTO ops(id, name_id, ...) VALUES(?, ?, ...)".
std::string InsertSql(TableId id, bool or_replace = false);
// "SELECT id, name_id, ... FROM ops" followed by `suffix` (" ORDER BY id").
// present_columns: the columns the file has (PRAGMA table_info); a column
// with an absent_default that the file lacks is selected as that default, so
// older files read with the same positions. Null: every column is present.
std::string SelectSql(TableId id, const char* suffix = "",
                      const std::vector<std::string>* present_columns = nullptr);

}  // namespace magneton::schema
