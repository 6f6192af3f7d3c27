#include "trace/op_spans.h"

#include <memory>

#include "trace/schema.h"
#include "trace/sqlite_util.h"

namespace magneton {
namespace {

template <typename Fn>
Status ForEachRow(sqlite3* db, const std::string& sql, Fn&& fn) {
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Statement s, sqlite::Statement::Prepare(db, sql.c_str()));
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db));
    if (!row) return Status::Ok();
    fn(s);
  }
}

}  // namespace

StatusOr<std::vector<OpSpan>> ReadOpSpans(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(raw, rc, "cannot open trace " + path + " to read its ops");
  std::vector<std::string> strings;
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db.get(), schema::SelectSql(schema::TableId::kStrings, " ORDER BY id"),
                                      [&](sqlite::Statement& s) {
                                        const int64_t id = s.ColumnInt(0);
                                        if (id >= 0 && static_cast<size_t>(id) >= strings.size()) strings.resize(id + 1);
                                        if (id >= 0) strings[static_cast<size_t>(id)] = s.ColumnText(1);
                                      }));
  std::vector<std::string> columns;
  MAGNETON_RETURN_IF_ERROR(ForEachRow(db.get(), "PRAGMA table_info(ops)",
                                      [&](sqlite::Statement& s) { columns.push_back(s.ColumnText(1)); }));
  // Positions as the schema lists the ops columns (trace/schema.cc).
  std::vector<OpSpan> out;
  MAGNETON_RETURN_IF_ERROR(
      ForEachRow(db.get(), schema::SelectSql(schema::TableId::kOps, " ORDER BY id", &columns), [&](sqlite::Statement& s) {
        OpSpan op;
        op.op_id = s.ColumnInt(0);
        const int64_t name_id = s.ColumnInt(1);
        op.name = name_id >= 0 && static_cast<size_t>(name_id) < strings.size() ? strings[name_id] : "";
        op.thread_id = s.ColumnInt(2);
        op.start_ns = s.ColumnInt(3);
        op.end_ns = s.ColumnInt(4);
        op.parent_id = s.ColumnNullableId(5);
        op.scope_id = s.ColumnNullableId(6);
        op.call_path_id = s.ColumnNullableId(7);
        op.correlation_id = static_cast<uint64_t>(s.ColumnInt(8));
        if (KeepsLinkArgs(op.name)) op.recorder_args = s.ColumnText(9);
        op.state_id = s.ColumnNullableId(12);
        out.push_back(std::move(op));
      }));
  return out;
}

}  // namespace magneton
