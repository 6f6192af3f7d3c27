#include "trace/op_spans.h"

#include <memory>

#include "trace/sqlite_util.h"

namespace magneton {

StatusOr<std::vector<OpSpan>> ReadOpSpans(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(raw, rc, "cannot open trace " + path + " to read its ops");
  // Only the columns linking needs: the whole trace may be large and is
  // still being written.
  MAGNETON_ASSIGN_OR_RETURN(
      sqlite::Statement s,
      sqlite::Statement::Prepare(db.get(),
                                 "SELECT o.id, s.value, o.thread_id, o.start_ns, o.end_ns, o.parent_id, "
                                 "o.correlation_id FROM ops o LEFT JOIN strings s ON s.id = o.name_id ORDER BY o.id"));
  std::vector<OpSpan> out;
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db.get()));
    if (!row) break;
    OpSpan op;
    op.op_id = s.ColumnInt(0);
    op.name = s.ColumnText(1);
    op.thread_id = s.ColumnInt(2);
    op.start_ns = s.ColumnInt(3);
    op.end_ns = s.ColumnInt(4);
    op.parent_id = s.ColumnNullableId(5);
    op.correlation_id = static_cast<uint64_t>(s.ColumnInt(6));
    out.push_back(std::move(op));
  }
  return out;
}

std::vector<OpSpan> OpSpansOf(const Trace& trace) {
  std::vector<OpSpan> out;
  out.reserve(trace.ops.size());
  for (const OpEvent& op : trace.ops) {
    out.push_back({op.id, trace.str(op.name_id), op.thread_id, op.start_ns, op.end_ns, op.parent_id,
                   op.correlation_id});
  }
  return out;
}

}  // namespace magneton
