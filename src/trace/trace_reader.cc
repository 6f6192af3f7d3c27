#include "magneton/trace_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "trace/control_chars.h"
#include "trace/schema.h"
#include "trace/sqlite_util.h"
#include "trace/trace_validate.h"
#include "trace/untrusted_db.h"

namespace magneton {
namespace {

using sqlite::Statement;

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

// A structural violation: the table as stored, the row and what is wrong.
Status RowError(const char* table, int64_t id, const std::string& what) {
  return Corrupt(std::string("table ") + table + ", row id " + std::to_string(id) + ": " + what);
}

Status CheckDenseIds(const char* table, const std::vector<int64_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != static_cast<int64_t>(i)) {
      return Corrupt(std::string("table ") + table + " has a gap or duplicate at id " +
                     std::to_string(ids[i]));
    }
  }
  return Status::Ok();
}

template <typename Fn>
Status ForEachRow(sqlite3* db, const char* sql, Fn&& fn) {
  MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db, sql));
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db));
    if (!row) break;
    MAGNETON_RETURN_IF_ERROR(fn(s));
  }
  return Status::Ok();
}

// Whether the file has `table` (one added later may be absent in older files).
StatusOr<bool> HasTable(sqlite3* db, const char* table) {
  MAGNETON_ASSIGN_OR_RETURN(Statement s,
                            Statement::Prepare(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?"));
  s.BindText(1, table);
  return s.Step(db);
}

// How many rows `table` holds, to reserve vectors exactly: a vector grown
// row by row holds up to twice its rows (the ops of a 2.4 M-op trace: 470 MB
// of capacity for 270 MB of ops).
// `where`: a condition on the rows counted (ReadTraceCounts), none when null.
StatusOr<size_t> RowCount(sqlite3* db, const char* table, const char* where = nullptr) {
  std::string sql = std::string("SELECT count(*) FROM ") + table;
  if (where != nullptr) sql += std::string(" WHERE ") + where;
  MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db, sql.c_str()));
  MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db));
  return row ? static_cast<size_t>(std::max<int64_t>(s.ColumnInt(0), 0)) : 0;
}

bool InRange(int64_t id, size_t n, bool nullable) {
  if (id == kNoId) return nullable;
  return id >= 0 && static_cast<size_t>(id) < n;
}

// The file's schema version (2 or 3; others are refused).
StatusOr<int> LoadMeta(sqlite3* db, Trace* t) {
  std::map<std::string, std::string> kv;
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kMeta).c_str(), [&](Statement& s) {
    kv[s.ColumnText(0)] = s.ColumnText(1);
    return Status::Ok();
  }));
  if (kv["format"] != schema::kFormatName) {
    return Corrupt("not a Magneton trace (no format marker)");
  }
  const std::string& version = kv["schema_version"];
  if (version == "1") {
    return VersionMismatch("trace schema version 1 (op arguments as unescaped text) is no longer read; this magneton "
                           "reads version " + std::to_string(kTraceSchemaVersion) +
                           " and version 2: re-record the trace with this magneton");
  }
  if (version != "2" && version != std::to_string(kTraceSchemaVersion)) {
    return VersionMismatch("trace schema version " + version + " is not supported (this magneton reads version " +
                           std::to_string(kTraceSchemaVersion) + " and version 2); re-record it with this version");
  }
  auto to_i64 = [](const std::string& s) -> int64_t {
    try {
      return s.empty() ? 0 : std::stoll(s);
    } catch (...) {
      return 0;
    }
  };
  t->meta.label = kv["label"];
  t->meta.command_line = kv["command_line"];
  t->meta.start_unix_ns = to_i64(kv["start_unix_ns"]);
  t->meta.start_monotonic_ns = to_i64(kv["start_monotonic_ns"]);
  t->meta.host = kv["host"];
  t->meta.cwd = kv["cwd"];
  t->meta.engine = kv["engine"];
  const int schema_version = version == "2" ? 2 : kTraceSchemaVersion;
  static const std::set<std::string> kFields = {"format", "schema_version", "label",   "command_line", "start_unix_ns",
                                                 "start_monotonic_ns", "host", "cwd", "engine"};
  for (const auto& [k, v] : kv) {
    if (k.rfind("version.", 0) == 0) {
      t->meta.versions[k.substr(8)] = v;
    } else if (!kFields.contains(k)) {
      t->meta.extra[k] = v;
    }
  }
  return schema_version;
}

// An op's tensor lists ("5,-1,7": tensor ids by slot) as links.
Status AddLinks(const OpEvent& op, const std::string& inputs, const std::string& outputs,
                std::vector<OpTensor>* links) {
  std::vector<int64_t> ids;
  for (TensorRole role : {TensorRole::kInput, TensorRole::kOutput}) {
    if (!sqlite::SplitInts(role == TensorRole::kInput ? inputs : outputs, &ids)) {
      return Corrupt("op " + std::to_string(op.id) + " has a malformed tensor list");
    }
    for (size_t slot = 0; slot < ids.size(); ++slot) {
      if (ids[slot] >= 0) links->push_back({op.id, role, static_cast<int32_t>(slot), ids[slot]});
    }
  }
  return Status::Ok();
}

Status CheckOp(const Trace& t, const OpEvent& op) {
  if (op.id < 0 || !InRange(op.name_id, t.strings.size(), false) ||
      !InRange(op.state_id, t.runtime_states.size(), true) || !InRange(op.scope_id, t.scopes.size(), true) ||
      !InRange(op.call_path_id, t.call_paths.size(), true) || op.end_ns < op.start_ns) {
    return Corrupt("op " + std::to_string(op.id) + " is malformed");
  }
  return Status::Ok();
}

// Version 2: ops and tensors are tables with every value inline.
Status LoadOpsV2(sqlite3* db, Trace* t, std::vector<OpTensor>* links) {
  MAGNETON_ASSIGN_OR_RETURN(std::vector<std::string> op_columns, sqlite::ColumnsOf(db, "ops"));
  return ForEachRow(db, schema::SelectSql(schema::TableId::kOps, " ORDER BY id", &op_columns).c_str(),
                    [&](Statement& s) {
                      OpEvent op;
                      op.id = s.ColumnInt(0);
                      op.name_id = s.ColumnInt(1);
                      op.thread_id = s.ColumnInt(2);
                      op.start_ns = s.ColumnInt(3);
                      op.end_ns = s.ColumnInt(4);
                      op.parent_id = s.ColumnNullableId(5);
                      op.scope_id = s.ColumnNullableId(6);
                      op.call_path_id = s.ColumnNullableId(7);
                      op.correlation_id = static_cast<uint64_t>(s.ColumnInt(8));
                      op.args = s.ColumnText(9);
                      op.state_id = s.ColumnNullableId(12);
                      if (std::string why = ParentLinkProblem(op.parent_id, op.id, "parent_id"); !why.empty()) {
                        return RowError("ops", op.id, why);
                      }
                      if (!t->ops.empty() && op.id <= t->ops.back().id) return RowError("ops", op.id, "the id repeats");
                      MAGNETON_RETURN_IF_ERROR(CheckOp(*t, op));
                      MAGNETON_RETURN_IF_ERROR(AddLinks(op, s.ColumnText(10), s.ColumnText(11), links));
                      t->ops.push_back(std::move(op));
                      return Status::Ok();
                    });
}

// Sizes and strides from their text ("2,3"), or false.
bool ParseDims(const std::string& shape_text, const std::string& strides_text, SharedDims* shape,
               SharedDims* strides) {
  std::vector<int64_t> parsed_shape, parsed_strides;
  if (!sqlite::SplitInts(shape_text, &parsed_shape) || !sqlite::SplitInts(strides_text, &parsed_strides)) return false;
  *shape = std::move(parsed_shape);
  *strides = std::move(parsed_strides);
  return true;
}

Status ParseTensorLayout(const std::string& shape, const std::string& strides, TensorMeta* tm) {
  if (!ParseDims(shape, strides, &tm->shape, &tm->strides)) {
    return Corrupt("tensor " + std::to_string(tm->id) + " has a malformed shape or strides");
  }
  return Status::Ok();
}

Status LoadTensorsV2(sqlite3* db, Trace* t) {
  std::vector<int64_t> ids;
  MAGNETON_RETURN_IF_ERROR(ForEachRow(
      db, schema::SelectSql(schema::TableId::kTensors, " ORDER BY id").c_str(), [&](Statement& s) {
        TensorMeta tm;
        tm.id = s.ColumnInt(0);
        tm.storage_addr = static_cast<uint64_t>(s.ColumnInt(1));
        tm.storage_offset = s.ColumnInt(2);
        MAGNETON_RETURN_IF_ERROR(ParseTensorLayout(s.ColumnText(3), s.ColumnText(4), &tm));
        tm.dtype = s.ColumnText(5);
        tm.device = s.ColumnText(6);
        tm.version = s.ColumnInt(7);
        tm.producer_op_id = s.ColumnNullableId(8);
        ids.push_back(tm.id);
        t->tensors.push_back(std::move(tm));
        return Status::Ok();
      }));
  return CheckDenseIds("tensors", ids);
}

// A version-3 dictionary (threads, op_args, layouts) by id. Its ids may have
// gaps (the writer's ids for a rolled-back batch), never duplicates.
template <typename T>
class Dictionary {
 public:
  explicit Dictionary(const char* table) : table_(table) {}
  Status Add(int64_t id, T value) {
    if (id < 0 || id > kMaxId) return Corrupt(std::string("table ") + table_ + " has id " + std::to_string(id));
    if (static_cast<size_t>(id) >= values_.size()) {
      values_.resize(id + 1);
      present_.resize(id + 1, false);
    }
    if (present_[id]) return Corrupt(std::string("table ") + table_ + " repeats id " + std::to_string(id));
    values_[id] = std::move(value);
    present_[id] = true;
    return Status::Ok();
  }
  const T* Find(int64_t id) const {
    return id >= 0 && static_cast<size_t>(id) < values_.size() && present_[id] ? &values_[id] : nullptr;
  }

 private:
  static constexpr int64_t kMaxId = int64_t{1} << 32;
  const char* table_;
  std::vector<T> values_;
  std::vector<bool> present_;
};

Status LoadOpsV3(sqlite3* db, Trace* t, std::vector<OpTensor>* links, bool keep_args) {
  Dictionary<int64_t> threads("threads");
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kThreads).c_str(), [&](Statement& s) {
    return threads.Add(s.ColumnInt(0), s.ColumnInt(1));
  }));
  // Each distinct text once: the ops that name it share it (SharedText).
  Dictionary<SharedText> args("op_args");
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kOpArgs).c_str(), [&](Statement& s) {
    return args.Add(s.ColumnInt(0), SharedText(s.ColumnText(1)));
  }));
  MAGNETON_ASSIGN_OR_RETURN(const size_t op_rows, RowCount(db, "op_rows"));
  t->ops.reserve(op_rows);
  return ForEachRow(
      db, schema::SelectSql(schema::TableId::kOpRows, " ORDER BY id").c_str(), [&](Statement& s) {
        OpEvent op;
        op.id = s.ColumnInt(0);
        op.name_id = s.ColumnInt(1);
        const int64_t* thread = threads.Find(s.ColumnInt(2));
        const SharedText* op_args = args.Find(s.ColumnInt(9));
        const int64_t duration_ns = s.ColumnInt(4);
        // Before any arithmetic on the id (parent_back) or the times.
        if (op.id < 0) return RowError("op_rows", op.id, "the id is negative");
        if (!thread || !op_args || duration_ns < 0) return Corrupt("op " + std::to_string(op.id) + " is malformed");
        op.thread_id = *thread;
        op.start_ns = s.ColumnInt(3);
        if (__builtin_add_overflow(op.start_ns, duration_ns, &op.end_ns)) {
          return RowError("op_rows", op.id, "start_ns + duration_ns is beyond any clock");
        }
        // parent_back: how many ids back the parent is (NULL: none). The
        // parent is always an earlier op: 0 would make the op its own
        // parent, a negative value a later one (a loop for every walk up
        // the op tree), more than the id a parent before op 0.
        if (sqlite3_column_type(s.get(), 5) == SQLITE_NULL) {
          op.parent_id = kNoId;
        } else {
          const int64_t back = s.ColumnInt(5);
          if (back <= 0) {
            return RowError("op_rows", op.id, "parent_back " + std::to_string(back) + " is not positive (" +
                                                  (back == 0 ? "the op would be its own parent" : "it names a later op") +
                                                  "; a parent is always an earlier op)");
          }
          if (back > op.id) {
            return RowError("op_rows", op.id, "parent_back " + std::to_string(back) + " names op id " +
                                                  std::to_string(op.id - back) + ", before the first op");
          }
          op.parent_id = op.id - back;
        }
        if (!t->ops.empty() && op.id <= t->ops.back().id) return RowError("op_rows", op.id, "the id repeats");
        op.scope_id = s.ColumnNullableId(6);
        op.call_path_id = s.ColumnNullableId(7);
        op.correlation_id = static_cast<uint64_t>(s.ColumnInt(8));
        if (keep_args) op.args = *op_args;
        op.state_id = s.ColumnNullableId(12);
        MAGNETON_RETURN_IF_ERROR(CheckOp(*t, op));
        MAGNETON_RETURN_IF_ERROR(AddLinks(op, s.ColumnText(10), s.ColumnText(11), links));
        t->ops.push_back(std::move(op));
        return Status::Ok();
      });
}

Status LoadTensorsV3(sqlite3* db, Trace* t) {
  Dictionary<TensorMeta> layouts("layouts");  // shape, strides, dtype, device
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kLayouts).c_str(), [&](Statement& s) {
    TensorMeta layout;
    layout.id = s.ColumnInt(0);
    // Parsed once: every tensor of this layout shares its sizes and strides.
    if (!ParseDims(s.ColumnText(1), s.ColumnText(2), &layout.shape, &layout.strides)) {
      return Corrupt("layout " + std::to_string(layout.id) + " has a malformed shape or strides");
    }
    layout.dtype = s.ColumnText(3);
    layout.device = s.ColumnText(4);
    return layouts.Add(layout.id, std::move(layout));
  }));
  MAGNETON_ASSIGN_OR_RETURN(const size_t tensor_rows, RowCount(db, "tensor_rows"));
  t->tensors.reserve(tensor_rows);
  std::vector<int64_t> ids;
  ids.reserve(tensor_rows);
  MAGNETON_RETURN_IF_ERROR(ForEachRow(
      db, schema::SelectSql(schema::TableId::kTensorRows, " ORDER BY id").c_str(), [&](Statement& s) {
        TensorMeta tm;
        tm.id = s.ColumnInt(0);
        const TensorMeta* layout = layouts.Find(s.ColumnInt(3));
        if (!layout) return Corrupt("tensor " + std::to_string(tm.id) + " names a missing layout");
        tm.storage_addr = static_cast<uint64_t>(s.ColumnInt(1));
        tm.storage_offset = s.ColumnInt(2);
        tm.shape = layout->shape;
        tm.strides = layout->strides;
        tm.dtype = layout->dtype;
        tm.device = layout->device;
        tm.version = s.ColumnInt(4);
        tm.producer_op_id = s.ColumnNullableId(5);
        ids.push_back(tm.id);
        t->tensors.push_back(std::move(tm));
        return Status::Ok();
      }));
  return CheckDenseIds("tensors", ids);
}

// The tensor rows without loading them, checked as LoadTensorsV3 checks
// them where the ops' links depend on it: ids dense from 0 (so the count is
// the range a link may name; ids are the primary key, so unique) and every
// layout present.
StatusOr<size_t> CountTensorRows(sqlite3* db) {
  MAGNETON_ASSIGN_OR_RETURN(
      Statement s, Statement::Prepare(db, "SELECT count(*), coalesce(min(id), 0), coalesce(max(id), -1), "
                                          "(SELECT count(*) FROM tensor_rows r WHERE NOT EXISTS "
                                          "(SELECT 1 FROM layouts l WHERE l.id = r.layout_id)) FROM tensor_rows"));
  MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db));
  if (!row) return size_t{0};
  const int64_t count = s.ColumnInt(0), min_id = s.ColumnInt(1), max_id = s.ColumnInt(2);
  if (count > 0 && (min_id != 0 || max_id != count - 1)) {
    return Corrupt("table tensors has a gap or duplicate (ids " + std::to_string(min_id) + " to " +
                   std::to_string(max_id) + " in " + std::to_string(count) + " rows)");
  }
  if (s.ColumnInt(3) > 0) return Corrupt(std::to_string(s.ColumnInt(3)) + " tensor(s) name a missing layout");
  return static_cast<size_t>(count);
}

Status LoadTables(sqlite3* db, Trace* t, const ReadOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(const int version, LoadMeta(db, t));
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kConfig, " ORDER BY key").c_str(),
                                      [&](Statement& s) {
                                        t->config.push_back({s.ColumnText(0), s.ColumnText(1), s.ColumnText(2)});
                                        return Status::Ok();
                                      }));
  std::vector<int64_t> ids;
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kStrings, " ORDER BY id").c_str(), [&](Statement& s) {
    ids.push_back(s.ColumnInt(0));
    t->strings.push_back(s.ColumnText(1));
    return Status::Ok();
  }));
  MAGNETON_RETURN_IF_ERROR(CheckDenseIds("strings", ids));
  const size_t n_strings = t->strings.size();

  ids.clear();
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kFrames, " ORDER BY id").c_str(),
                                      [&](Statement& s) {
                                        Frame f{s.ColumnInt(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnInt(3)};
                                        if (!InRange(f.file_id, n_strings, false) ||
                                            !InRange(f.function_id, n_strings, false)) {
                                          return Corrupt("frame " + std::to_string(f.id) + " names a missing string");
                                        }
                                        ids.push_back(f.id);
                                        t->frames.push_back(f);
                                        return Status::Ok();
                                      }));
  MAGNETON_RETURN_IF_ERROR(CheckDenseIds("frames", ids));

  ids.clear();
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kCallPaths, " ORDER BY id").c_str(),
                                      [&](Statement& s) {
                                        CallPath p{s.ColumnInt(0), s.ColumnInt(1), s.ColumnNullableId(2)};
                                        // A parent is always interned before its child.
                                        if (!InRange(p.frame_id, t->frames.size(), false)) {
                                          return RowError("call_paths", p.id,
                                                          "frame_id " + std::to_string(p.frame_id) + " names no frame");
                                        }
                                        if (std::string why = ParentLinkProblem(p.parent_id, p.id, "parent_id");
                                            !why.empty()) {
                                          return RowError("call_paths", p.id, why);
                                        }
                                        ids.push_back(p.id);
                                        t->call_paths.push_back(p);
                                        return Status::Ok();
                                      }));
  MAGNETON_RETURN_IF_ERROR(CheckDenseIds("call_paths", ids));

  ids.clear();
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db, schema::SelectSql(schema::TableId::kScopes, " ORDER BY id").c_str(),
                                      [&](Statement& s) {
                                        Scope sc{s.ColumnInt(0), s.ColumnInt(1), s.ColumnInt(2), s.ColumnNullableId(3)};
                                        sc.init_call_path_id = s.ColumnNullableId(4);
                                        sc.init_args = s.ColumnText(5);
                                        if (!InRange(sc.name_id, n_strings, false) ||
                                            !InRange(sc.type_id, n_strings, false) ||
                                            !InRange(sc.init_call_path_id, t->call_paths.size(), true)) {
                                          return RowError("scopes", sc.id, "names a missing string or call path");
                                        }
                                        // A parent scope is always interned before its child.
                                        if (std::string why = ParentLinkProblem(sc.parent_id, sc.id, "parent_id");
                                            !why.empty()) {
                                          return RowError("scopes", sc.id, why);
                                        }
                                        ids.push_back(sc.id);
                                        t->scopes.push_back(sc);
                                        return Status::Ok();
                                      }));
  MAGNETON_RETURN_IF_ERROR(CheckDenseIds("scopes", ids));

  // Runtime states before ops, so that each op's state id is checked. A
  // trace written before runtime states has no such table: no states.
  MAGNETON_ASSIGN_OR_RETURN(bool has_states, HasTable(db, "runtime_states"));
  if (has_states) {
    int64_t rows = 0;
    MAGNETON_RETURN_IF_ERROR(ForEachRow(
        db, schema::SelectSql(schema::TableId::kRuntimeStates, " ORDER BY state_id, key").c_str(),
        [&](Statement& s) {
          const int64_t id = s.ColumnInt(0);
          // Every state has a row, so no id exceeds the rows seen.
          if (id < 0 || id > rows++) return Corrupt("runtime state id " + std::to_string(id) + " is out of range");
          while (static_cast<int64_t>(t->runtime_states.size()) <= id) {
            t->runtime_states.push_back({static_cast<int64_t>(t->runtime_states.size()), {}});
          }
          t->runtime_states[id].values[s.ColumnText(1)] = s.ColumnText(2);
          return Status::Ok();
        }));
  }
  MAGNETON_ASSIGN_OR_RETURN(bool has_setters, HasTable(db, "state_setters"));
  if (has_setters) {
    MAGNETON_RETURN_IF_ERROR(ForEachRow(
        db, schema::SelectSql(schema::TableId::kStateSetters, " ORDER BY t_ns, rowid").c_str(), [&](Statement& s) {
          t->state_setters.push_back(
              {s.ColumnText(0), s.ColumnText(1), s.ColumnText(2), s.ColumnInt(3), s.ColumnInt(4)});
          return Status::Ok();
        }));
  }

  std::vector<OpTensor> pending_links;  // checked once tensors are loaded
  if (version == 2) {
    MAGNETON_RETURN_IF_ERROR(LoadOpsV2(db, t, &pending_links));
    MAGNETON_RETURN_IF_ERROR(LoadTensorsV2(db, t));
  } else {
    MAGNETON_RETURN_IF_ERROR(LoadOpsV3(db, t, &pending_links, options.op_args));
    if (options.tensors) {
      MAGNETON_RETURN_IF_ERROR(LoadTensorsV3(db, t));
    } else {
      MAGNETON_ASSIGN_OR_RETURN(t->tensors_not_read, CountTensorRows(db));
    }
  }

  const size_t tensor_ids = t->tensors.size() + t->tensors_not_read;
  for (const OpTensor& l : pending_links) {
    if (!InRange(l.tensor_id, tensor_ids, false)) {
      return Corrupt("op " + std::to_string(l.op_id) + " names a missing tensor " + std::to_string(l.tensor_id));
    }
  }
  pending_links.shrink_to_fit();  // links are not counted up front (they sit in the op rows)
  t->op_tensors = std::move(pending_links);

  MAGNETON_ASSIGN_OR_RETURN(std::vector<std::string> activity_columns, sqlite::ColumnsOf(db, "device_activities"));
  MAGNETON_RETURN_IF_ERROR(ForEachRow(
      db, schema::SelectSql(schema::TableId::kDeviceActivities, " ORDER BY rowid", &activity_columns).c_str(),
      [&](Statement& s) {
        DeviceActivity a{static_cast<uint64_t>(s.ColumnInt(0)), s.ColumnText(1), s.ColumnInt(2), s.ColumnInt(3),
                         s.ColumnInt(4), s.ColumnInt(5), s.ColumnNullableId(6), s.ColumnText(7),
                         s.ColumnNullableId(8), s.ColumnNullableId(9), s.ColumnNullableId(10)};
        if (!InRange(a.name_id, n_strings, false)) return Corrupt("device activity names a missing string");
        if (a.op_id < kNoId || a.captured_op_id < kNoId) return Corrupt("device activity names a negative op id");
        if (a.end_ns < a.start_ns) return Corrupt("device activity ends before it starts");
        t->device_activities.push_back(std::move(a));
        return Status::Ok();
      }));

  MAGNETON_RETURN_IF_ERROR(ForEachRow(
      db, schema::SelectSql(schema::TableId::kEnergySamples, " ORDER BY domain, t_ns").c_str(),
      [&](Statement& s) {
        EnergySample e;
        e.domain = s.ColumnText(0);
        e.t_ns = s.ColumnInt(1);
        e.energy_uj = s.ColumnDouble(2);
        e.power_mw = s.ColumnDouble(3);
        std::string prov = s.ColumnText(4);
        if (prov == "measured") {
          e.provenance = Provenance::kMeasured;
        } else if (prov == "estimated") {
          e.provenance = Provenance::kEstimated;
        } else {
          return Corrupt("energy sample with unknown provenance '" + prov + "'");
        }
        e.meter = s.ColumnText(5);
        t->energy_samples.push_back(std::move(e));
        return Status::Ok();
      }));

  // Ops are written when they end, so a killed run can leave references to
  // ops that never finished: cut those links rather than refuse the file.
  auto has_op = [&](int64_t id) {
    return std::binary_search(t->ops.begin(), t->ops.end(), id,
                              [](const auto& a, const auto& b) {
                                if constexpr (std::is_same_v<std::decay_t<decltype(a)>, OpEvent>) {
                                  return a.id < b;
                                } else {
                                  return a < b.id;
                                }
                              });
  };
  for (auto& op : t->ops) {
    if (op.parent_id != kNoId && !has_op(op.parent_id)) op.parent_id = kNoId;
  }
  for (auto& tm : t->tensors) {
    if (tm.producer_op_id != kNoId && !has_op(tm.producer_op_id)) tm.producer_op_id = kNoId;
  }
  std::erase_if(t->op_tensors, [&](const OpTensor& l) { return !has_op(l.op_id); });
  for (auto& a : t->device_activities) {
    if (a.op_id != kNoId && !has_op(a.op_id)) a.op_id = kNoId;
    if (a.captured_op_id != kNoId && !has_op(a.captured_op_id)) a.captured_op_id = kNoId;
  }
  // The rows checked above give every invariant of ValidateTraceStructure
  // (trace/trace_validate.h): a second pass over the whole trace would cost
  // 2-3% of the read and find nothing, so the tests and the analysis fuzzer
  // hold the reader to it instead.
  return Status::Ok();
}

// The file may come from anyone: its schema is checked before any row is
// read, and every query is then bounded by a QueryBudget (trace/untrusted_db.h).
Status Harden(sqlite3* db, const std::string& what) {
  Status st = sqlite::HardenUntrustedDb(db);
  return st.ok() ? st : Status(st.code(), what + " is not read: " + st.message());
}

// What a failed read of `what` says: the budget if it ran out, a missing
// table as a file that is no trace, else the error with the file's name.
Status ReadFailure(const sqlite::QueryBudget& budget, const std::string& what, const Status& st) {
  if (budget.exhausted()) return budget.Exceeded(what);
  if (st.code() == StatusCode::kInternal && st.message().find("no such table") != std::string::npos) {
    return Corrupt(what + " is not a Magneton trace or is damaged: " + st.message());
  }
  return Status(st.code(), what + ": " + st.message());
}

StatusOr<Trace> ReadOpenDb(sqlite3* db, const std::string& what, const ReadOptions& options = {}) {
  MAGNETON_RETURN_IF_ERROR(Harden(db, what));
  sqlite::QueryBudget budget(db);
  Trace trace;
  if (Status st = LoadTables(db, &trace, options); !st.ok()) return ReadFailure(budget, what, st);
  // Text from a file reaches terminals: no escape sequence passes (trace/control_chars.h).
  if (const size_t n = NeutralizeControlCharacters(&trace); n > 0) {
    trace.meta.extra["reader.control_characters"] = std::to_string(n);
  }
  return trace;
}

// Opens a trace file after checking it is one (an SQLite file header).
StatusOr<DbPtr> OpenTraceFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFound("trace file " + path + " does not exist");
  if (std::filesystem::is_directory(path, ec)) return InvalidArgument(path + " is a directory, not a trace file");
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) return PermissionDenied("cannot read trace file " + path + " (permission denied?)");
    char header[16] = {};
    probe.read(header, sizeof(header));
    if (probe.gcount() < 16 || std::memcmp(header, "SQLite format 3\0", 16) != 0) {
      return Corrupt(path + " is not a Magneton trace (not an SQLite file, or truncated)");
    }
  }
  sqlite3* raw = nullptr;
  // Read-write so that SQLite can recover the WAL of a run that was killed;
  // we never modify the tables. Fall back to read-only for protected files.
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close(raw);
    raw = nullptr;
    rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  }
  DbPtr db(raw);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(raw, rc, "cannot open trace " + path);
  return db;
}

}  // namespace

StatusOr<Trace> ReadTrace(const std::string& path) { return ReadTrace(path, ReadOptions{}); }

StatusOr<Trace> ReadTrace(const std::string& path, const ReadOptions& options) {
  MAGNETON_ASSIGN_OR_RETURN(DbPtr db, OpenTraceFile(path));
  return ReadOpenDb(db.get(), path, options);
}

StatusOr<TraceCounts> ReadTraceCounts(const std::string& path) {
  MAGNETON_ASSIGN_OR_RETURN(DbPtr db, OpenTraceFile(path));
  MAGNETON_RETURN_IF_ERROR(Harden(db.get(), path));
  sqlite::QueryBudget budget(db.get());
  Trace meta_only;
  auto version = LoadMeta(db.get(), &meta_only);
  if (!version.ok()) return ReadFailure(budget, path, version.status());
  const bool v2 = *version == 2;
  TraceCounts counts;
  auto count = [&](const char* table, size_t* out, const char* where = nullptr) -> Status {
    MAGNETON_ASSIGN_OR_RETURN(*out, RowCount(db.get(), table, where));
    return Status::Ok();
  };
  Status st = count(v2 ? "ops" : "op_rows", &counts.ops);
  if (st.ok()) st = count(v2 ? "tensors" : "tensor_rows", &counts.tensors);
  if (st.ok()) st = count("device_activities", &counts.device_activities);
  if (st.ok()) st = count("device_activities", &counts.device_activities_linked, "op_id IS NOT NULL");
  if (!st.ok()) return ReadFailure(budget, path, st);
  counts.meta = std::move(meta_only.meta);
  // Text from a file reaches terminals: no escape sequence passes (trace/control_chars.h).
  if (const size_t n = NeutralizeControlCharacters(&counts.meta); n > 0) {
    counts.meta.extra["reader.control_characters"] = std::to_string(n);
  }
  return counts;
}

StatusOr<Trace> ReadTraceFromBytes(const void* data, size_t size) {
  if (size < 16 || std::memcmp(data, "SQLite format 3\0", 16) != 0) {
    return Corrupt("not a Magneton trace (not an SQLite file, or truncated)");
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(raw, rc, "opening in-memory database");
  auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(size));
  if (!copy) return Internal("out of memory");
  std::memcpy(copy, data, size);
  // A trace still in WAL mode (bytes 18-19 == 2) cannot be deserialized; its
  // committed pages are in the main file after a checkpoint, so read it as
  // a rollback-journal database.
  if (size > 19 && copy[18] == 2 && copy[19] == 2) copy[18] = copy[19] = 1;
  rc = sqlite3_deserialize(db.get(), "main", copy, static_cast<sqlite3_int64>(size), static_cast<sqlite3_int64>(size),
                           SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(db.get(), rc, "loading trace bytes");
  return ReadOpenDb(db.get(), "trace");
}

}  // namespace magneton
