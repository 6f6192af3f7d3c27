#include "trace/fingerprint_rows.h"

#include <sqlite3.h>

#include "trace/schema.h"
#include "trace/sqlite_util.h"

namespace magneton {

Status ForEachFingerprintRow(const std::string& trace_path,
                             const std::function<Status(const FingerprintRowView&)>& fn) {
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Db db, sqlite::Open(trace_path, SQLITE_OPEN_READONLY, "opening"));
  MAGNETON_ASSIGN_OR_RETURN(
      sqlite::Statement st,
      sqlite::Statement::Prepare(db.get(), schema::SelectSql(schema::TableId::kFingerprints).c_str()));
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, st.Step(db.get()));
    if (!row) break;
    FingerprintRowView r;
    r.tensor_id = st.ColumnInt(0);
    const unsigned char* kind = sqlite3_column_text(st.get(), 1);
    if (kind != nullptr) r.kind = std::string_view(reinterpret_cast<const char*>(kind), sqlite3_column_bytes(st.get(), 1));
    const void* blob = sqlite3_column_blob(st.get(), 2);
    const int size = sqlite3_column_bytes(st.get(), 2);
    if (blob != nullptr && size > 0) r.data = std::string_view(static_cast<const char*>(blob), static_cast<size_t>(size));
    MAGNETON_RETURN_IF_ERROR(fn(r));
  }
  return Status::Ok();
}

StatusOr<std::vector<FingerprintRow>> ReadFingerprintRows(const std::string& trace_path) {
  std::vector<FingerprintRow> out;
  MAGNETON_RETURN_IF_ERROR(ForEachFingerprintRow(trace_path, [&out](const FingerprintRowView& r) {
    out.push_back({r.tensor_id, std::string(r.kind), std::string(r.data)});
    return Status::Ok();
  }));
  return out;
}

Status WriteFingerprintRows(const std::string& trace_path, const std::vector<FingerprintRow>& rows) {
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Db db, sqlite::Open(trace_path, SQLITE_OPEN_READWRITE, "opening"));
  return sqlite::InTransaction(db.get(), [&]() -> Status {
    MAGNETON_ASSIGN_OR_RETURN(
        sqlite::Statement st,
        sqlite::Statement::Prepare(db.get(), schema::InsertSql(schema::TableId::kFingerprints, true).c_str()));
    for (const FingerprintRow& r : rows) {
      st.BindInt(1, r.tensor_id);
      st.BindText(2, r.kind);
      st.BindBlob(3, r.data);
      MAGNETON_RETURN_IF_ERROR(st.Run(db.get()));
    }
    return Status::Ok();
  });
}

}  // namespace magneton
