#include "trace/schema.h"

#include <algorithm>
#include <array>

namespace magneton::schema {
namespace {

constexpr Column kMetaColumns[] = {{"key", "TEXT PRIMARY KEY"}, {"value", "TEXT NOT NULL"}};
constexpr Column kConfigColumns[] = {
    {"key", "TEXT PRIMARY KEY"}, {"value", "TEXT NOT NULL"}, {"source", "TEXT NOT NULL"}};
constexpr Column kStringsColumns[] = {{"id", "INTEGER PRIMARY KEY"}, {"value", "TEXT NOT NULL"}};
constexpr Column kFramesColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                     {"file_id", "INTEGER NOT NULL"},
                                     {"line", "INTEGER NOT NULL"},
                                     {"function_id", "INTEGER NOT NULL"}};
constexpr Column kCallPathsColumns[] = {
    {"id", "INTEGER PRIMARY KEY"}, {"frame_id", "INTEGER NOT NULL"}, {"parent_id", "INTEGER"}};
constexpr Column kScopesColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                     {"name_id", "INTEGER NOT NULL"},
                                     {"type_id", "INTEGER NOT NULL"},
                                     {"parent_id", "INTEGER"},
                                     // Scope::init_*; absent in traces written before scope origins.
                                     {"init_call_path_id", "INTEGER", "NULL"},
                                     {"init_args", "TEXT", "NULL"}};
// Op inputs/outputs are stored inline on each op (a row per link would
// double the rows written while recording); the op_tensors view gives them
// as rows.
constexpr Column kOpsColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                  {"name_id", "INTEGER NOT NULL"},
                                  {"thread_id", "INTEGER NOT NULL"},
                                  {"start_ns", "INTEGER NOT NULL"},
                                  {"end_ns", "INTEGER NOT NULL"},
                                  {"parent_id", "INTEGER"},
                                  {"scope_id", "INTEGER"},
                                  {"call_path_id", "INTEGER"},
                                  {"correlation_id", "INTEGER NOT NULL"},
                                  {"args", "TEXT NOT NULL"},
                                  {"inputs", "TEXT NOT NULL"},
                                  {"outputs", "TEXT NOT NULL"},
                                  // Trace::runtime_states id; absent in traces written before runtime states.
                                  {"state_id", "INTEGER", "NULL"}};
constexpr Column kTensorsColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                      {"storage_addr", "INTEGER NOT NULL"},
                                      {"storage_offset", "INTEGER NOT NULL"},
                                      {"shape", "TEXT NOT NULL"},
                                      {"strides", "TEXT NOT NULL"},
                                      {"dtype", "TEXT NOT NULL"},
                                      {"device", "TEXT NOT NULL"},
                                      {"version", "INTEGER NOT NULL"},
                                      {"producer_op_id", "INTEGER"}};
constexpr Column kDeviceActivitiesColumns[] = {{"correlation_id", "INTEGER NOT NULL"},
                                               {"device", "TEXT NOT NULL"},
                                               {"stream", "INTEGER NOT NULL"},
                                               {"name_id", "INTEGER NOT NULL"},
                                               {"start_ns", "INTEGER NOT NULL"},
                                               {"end_ns", "INTEGER NOT NULL"},
                                               // Added with GPU ingestion (docs/TRACE_FORMAT.md): the op
                                               // charged with the activity, and what it was.
                                               {"op_id", "INTEGER", "NULL"},
                                               {"kind", "TEXT", "'kernel'"}};
constexpr Column kEnergySamplesColumns[] = {{"domain", "TEXT NOT NULL"}, {"t_ns", "INTEGER NOT NULL"},
                                            {"energy_uj", "REAL"},       {"power_mw", "REAL"},
                                            {"provenance", "TEXT NOT NULL"}, {"meter", "TEXT NOT NULL"}};
constexpr Column kOpReplaysColumns[] = {{"op_id", "INTEGER NOT NULL"},
                                        {"signature", "TEXT NOT NULL"},
                                        {"occurrences", "INTEGER NOT NULL"},
                                        {"meter", "TEXT NOT NULL"},
                                        {"provenance", "TEXT NOT NULL"},
                                        {"calls_per_round", "INTEGER NOT NULL"},
                                        {"rounds", "INTEGER NOT NULL"},
                                        {"duration_ns_mean", "REAL"},
                                        {"duration_ns_stddev", "REAL"},
                                        {"energy_uj_mean", "REAL"},
                                        {"energy_uj_stddev", "REAL"},
                                        {"error", "TEXT NOT NULL"},
                                        // Added with device replay; AppendOpReplays adds them to older files.
                                        {"device", "TEXT NOT NULL DEFAULT 'cpu'", "'cpu'"},
                                        {"method", "TEXT NOT NULL DEFAULT ''", "''"},
                                        {"online_energy_uj", "REAL", "NULL"}};
constexpr Column kFingerprintsColumns[] = {
    {"tensor_id", "INTEGER PRIMARY KEY"}, {"kind", "TEXT NOT NULL"}, {"data", "BLOB NOT NULL"}};

// One row per (state, key): a state is the whole map in effect, interned by
// value, so only a change of some value adds rows (docs/TRACE_FORMAT.md).
constexpr Column kRuntimeStatesColumns[] = {
    {"state_id", "INTEGER NOT NULL"}, {"key", "TEXT NOT NULL"}, {"value", "TEXT NOT NULL"}};
// "site" is StateSetter::where ("file:line:function"; WHERE is SQL).
constexpr Column kStateSettersColumns[] = {{"key", "TEXT NOT NULL"},     {"value", "TEXT NOT NULL"},
                                           {"site", "TEXT NOT NULL"},    {"t_ns", "INTEGER NOT NULL"},
                                           {"thread_id", "INTEGER NOT NULL"}};

const std::array<Table, 14> kTables = {{
    {TableId::kMeta, "meta", kMetaColumns},
    {TableId::kConfig, "config", kConfigColumns},
    {TableId::kStrings, "strings", kStringsColumns},
    {TableId::kFrames, "frames", kFramesColumns},
    {TableId::kCallPaths, "call_paths", kCallPathsColumns},
    {TableId::kScopes, "scopes", kScopesColumns},
    {TableId::kOps, "ops", kOpsColumns},
    {TableId::kTensors, "tensors", kTensorsColumns},
    {TableId::kDeviceActivities, "device_activities", kDeviceActivitiesColumns},
    {TableId::kEnergySamples, "energy_samples", kEnergySamplesColumns},
    {TableId::kOpReplays, "op_replays", kOpReplaysColumns},
    {TableId::kFingerprints, "fingerprints", kFingerprintsColumns},
    {TableId::kRuntimeStates, "runtime_states", kRuntimeStatesColumns, /*may_be_absent=*/true},
    {TableId::kStateSetters, "state_setters", kStateSettersColumns, /*may_be_absent=*/true},
}};

constexpr const char* kOpTensorsView = R"sql(
CREATE VIEW op_tensors AS
  SELECT o.id AS op_id, 0 AS role, CAST(j.key AS INTEGER) AS slot, CAST(j.value AS INTEGER) AS tensor_id
    FROM ops o, json_each('[' || o.inputs || ']') j WHERE j.value >= 0
  UNION ALL
  SELECT o.id, 1, CAST(j.key AS INTEGER), CAST(j.value AS INTEGER)
    FROM ops o, json_each('[' || o.outputs || ']') j WHERE j.value >= 0;
)sql";

std::string ColumnList(const Table& t) {
  std::string out;
  for (const Column& c : t.columns) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

}  // namespace

const Table& GetTable(TableId id) { return kTables[static_cast<size_t>(id)]; }
std::span<const Table> AllTables() { return kTables; }

std::string CreateTablesSql() {
  std::string out;
  for (const Table& t : kTables) {
    out += "CREATE TABLE ";
    out += t.name;
    out += "(";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (i) out += ", ";
      out += t.columns[i].name;
      out += " ";
      out += t.columns[i].type;
    }
    out += ");\n";
  }
  return out + kOpTensorsView;
}

std::string InsertSql(TableId id, bool or_replace) {
  const Table& t = GetTable(id);
  std::string marks;
  for (size_t i = 0; i < t.columns.size(); ++i) marks += i ? ", ?" : "?";
  return std::string(or_replace ? "INSERT OR REPLACE INTO " : "INSERT INTO ") + t.name + "(" + ColumnList(t) +
         ") VALUES(" + marks + ")";
}

std::string SelectSql(TableId id, const char* suffix, const std::vector<std::string>* present_columns) {
  const Table& t = GetTable(id);
  if (!present_columns) return "SELECT " + ColumnList(t) + " FROM " + t.name + suffix;
  std::string list;
  for (const Column& c : t.columns) {
    if (!list.empty()) list += ", ";
    const bool present =
        std::find(present_columns->begin(), present_columns->end(), c.name) != present_columns->end();
    if (!present && c.absent_default) {
      list += std::string(c.absent_default) + " AS " + c.name;
    } else {
      list += c.name;  // a missing column without a default: SQLite names it in the error
    }
  }
  return "SELECT " + list + " FROM " + t.name + suffix;
}

}  // namespace magneton::schema
