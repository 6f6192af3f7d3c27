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
// The dictionaries that keep repeated text out of the per-op and per-tensor
// rows (schema version 3): each distinct value once, rows name it by id. The
// writer interns them on its own thread with a bounded cache, so a value may
// appear under more than one id (never the other way round).
constexpr Column kThreadsColumns[] = {{"id", "INTEGER PRIMARY KEY"}, {"os_thread_id", "INTEGER NOT NULL"}};
constexpr Column kOpArgsColumns[] = {{"id", "INTEGER PRIMARY KEY"}, {"args", "TEXT NOT NULL"}};
constexpr Column kLayoutsColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                      {"shape", "TEXT NOT NULL"},
                                      {"strides", "TEXT NOT NULL"},
                                      {"dtype", "TEXT NOT NULL"},
                                      {"device", "TEXT NOT NULL"}};
// One row per op, integers only but for the tensor lists. SQLite stores an
// integer in 0-8 bytes by magnitude, so what repeats or is near is stored
// small: the thread as an index, the end as a duration, the parent as how
// many ids back it is. Op inputs/outputs are stored inline on each op (a row
// per link would double the rows written while recording); the op_tensors
// view gives them as rows, the ops view gives the row as version 2 had it.
constexpr Column kOpRowsColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                     {"name_id", "INTEGER NOT NULL"},
                                     {"thread", "INTEGER NOT NULL"},  // threads.id
                                     {"start_ns", "INTEGER NOT NULL"},
                                     {"duration_ns", "INTEGER NOT NULL"},
                                     {"parent_back", "INTEGER"},  // id - parent's id
                                     {"scope_id", "INTEGER"},
                                     {"call_path_id", "INTEGER"},
                                     {"correlation_id", "INTEGER NOT NULL"},
                                     {"args_id", "INTEGER NOT NULL"},  // op_args.id
                                     {"inputs", "TEXT NOT NULL"},
                                     {"outputs", "TEXT NOT NULL"},
                                     {"state_id", "INTEGER"}};
constexpr Column kTensorRowsColumns[] = {{"id", "INTEGER PRIMARY KEY"},
                                         {"storage_addr", "INTEGER NOT NULL"},
                                         {"storage_offset", "INTEGER NOT NULL"},
                                         {"layout_id", "INTEGER NOT NULL"},  // layouts.id
                                         {"version", "INTEGER NOT NULL"},
                                         {"producer_op_id", "INTEGER"}};
// The ops and tensors of version 2, tables there and views over the rows and
// dictionaries above in version 3: SQL written for either reads both.
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
                                               {"kind", "TEXT", "'kernel'"},
                                               // Added with CUDA graphs: the graph and node that ran
                                               // it, the op whose captured launch made the node.
                                               {"graph_id", "INTEGER", "NULL"},
                                               {"graph_node_id", "INTEGER", "NULL"},
                                               {"captured_op_id", "INTEGER", "NULL"}};
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

constexpr const char* kOpsView = R"sql(
CREATE VIEW ops AS
  SELECT o.id AS id, o.name_id AS name_id, t.os_thread_id AS thread_id, o.start_ns AS start_ns,
         o.start_ns + o.duration_ns AS end_ns, o.id - o.parent_back AS parent_id, o.scope_id AS scope_id,
         o.call_path_id AS call_path_id, o.correlation_id AS correlation_id, a.args AS args, o.inputs AS inputs,
         o.outputs AS outputs, o.state_id AS state_id
    FROM op_rows o LEFT JOIN threads t ON t.id = o.thread LEFT JOIN op_args a ON a.id = o.args_id;
)sql";

constexpr const char* kTensorsView = R"sql(
CREATE VIEW tensors AS
  SELECT r.id AS id, r.storage_addr AS storage_addr, r.storage_offset AS storage_offset, l.shape AS shape,
         l.strides AS strides, l.dtype AS dtype, l.device AS device, r.version AS version,
         r.producer_op_id AS producer_op_id
    FROM tensor_rows r LEFT JOIN layouts l ON l.id = r.layout_id;
)sql";

const std::array<Table, 19> kTables = {{
    {TableId::kMeta, "meta", kMetaColumns},
    {TableId::kConfig, "config", kConfigColumns},
    {TableId::kStrings, "strings", kStringsColumns},
    {TableId::kFrames, "frames", kFramesColumns},
    {TableId::kCallPaths, "call_paths", kCallPathsColumns},
    {TableId::kScopes, "scopes", kScopesColumns},
    {TableId::kOps, "ops", kOpsColumns, false, kOpsView},
    {TableId::kTensors, "tensors", kTensorsColumns, false, kTensorsView},
    {TableId::kDeviceActivities, "device_activities", kDeviceActivitiesColumns},
    {TableId::kEnergySamples, "energy_samples", kEnergySamplesColumns},
    {TableId::kOpReplays, "op_replays", kOpReplaysColumns},
    {TableId::kFingerprints, "fingerprints", kFingerprintsColumns},
    {TableId::kRuntimeStates, "runtime_states", kRuntimeStatesColumns, /*may_be_absent=*/true},
    {TableId::kStateSetters, "state_setters", kStateSettersColumns, /*may_be_absent=*/true},
    {TableId::kThreads, "threads", kThreadsColumns},
    {TableId::kOpArgs, "op_args", kOpArgsColumns},
    {TableId::kLayouts, "layouts", kLayoutsColumns},
    {TableId::kOpRows, "op_rows", kOpRowsColumns},
    {TableId::kTensorRows, "tensor_rows", kTensorRowsColumns},
}};

constexpr const char* kOpTensorsView = R"sql(
CREATE VIEW op_tensors AS
  SELECT o.id AS op_id, 0 AS role, CAST(j.key AS INTEGER) AS slot, CAST(j.value AS INTEGER) AS tensor_id
    FROM op_rows o, json_each('[' || o.inputs || ']') j WHERE j.value >= 0
  UNION ALL
  SELECT o.id, 1, CAST(j.key AS INTEGER), CAST(j.value AS INTEGER)
    FROM op_rows o, json_each('[' || o.outputs || ']') j WHERE j.value >= 0;
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
    if (t.view_sql) continue;  // after the tables they read
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
  for (const Table& t : kTables) {
    if (t.view_sql) out += t.view_sql;
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
