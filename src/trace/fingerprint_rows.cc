#include "trace/fingerprint_rows.h"

#include <sqlite3.h>

#include "trace/schema.h"
#include "trace/sqlite_util.h"

namespace magneton {

StatusOr<std::vector<FingerprintRow>> ReadFingerprintRows(const std::string& trace_path) {
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Db db, sqlite::Open(trace_path, SQLITE_OPEN_READONLY, "opening"));
  MAGNETON_ASSIGN_OR_RETURN(
      sqlite::Statement st,
      sqlite::Statement::Prepare(db.get(), schema::SelectSql(schema::TableId::kFingerprints).c_str()));
  std::vector<FingerprintRow> out;
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, st.Step(db.get()));
    if (!row) break;
    FingerprintRow r;
    r.tensor_id = st.ColumnInt(0);
    r.kind = st.ColumnText(1);
    const void* blob = sqlite3_column_blob(st.get(), 2);
    const int size = sqlite3_column_bytes(st.get(), 2);
    if (blob != nullptr && size > 0) r.data.assign(static_cast<const char*>(blob), static_cast<size_t>(size));
    out.push_back(std::move(r));
  }
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
