// The fingerprints table of a .mtrace file: read (read-only open) and write.
#include <sqlite3.h>

#include <memory>

#include "magneton/fingerprint.h"
#include "trace/sqlite_util.h"

namespace magneton {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

StatusOr<Db> Open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(raw, rc, "opening " + path);
  sqlite3_busy_timeout(raw, 5000);
  return db;
}

}  // namespace

StatusOr<FingerprintMap> LoadFingerprints(const std::string& trace_path) {
  MAGNETON_ASSIGN_OR_RETURN(Db db, Open(trace_path, SQLITE_OPEN_READONLY));
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Statement st,
                            sqlite::Statement::Prepare(db.get(), "SELECT tensor_id, kind, data FROM fingerprints"));
  FingerprintMap out;
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, st.Step(db.get()));
    if (!row) break;
    const int64_t tensor_id = st.ColumnInt(0);
    const std::string kind = st.ColumnText(1);
    const void* blob = sqlite3_column_blob(st.get(), 2);
    const int size = sqlite3_column_bytes(st.get(), 2);
    auto fp = DecodeFingerprint(kind, std::string_view(static_cast<const char*>(blob), static_cast<size_t>(size)));
    if (!fp.ok()) {
      return Status(fp.status().code(), trace_path + ": fingerprint of tensor " + std::to_string(tensor_id) + ": " +
                                            fp.status().message());
    }
    out.emplace(tensor_id, std::move(fp).value());
  }
  return out;
}

Status WriteFingerprints(const std::string& trace_path, const FingerprintMap& fingerprints) {
  MAGNETON_ASSIGN_OR_RETURN(Db db, Open(trace_path, SQLITE_OPEN_READWRITE));
  return sqlite::InTransaction(db.get(), [&]() -> Status {
    MAGNETON_ASSIGN_OR_RETURN(
        sqlite::Statement st,
        sqlite::Statement::Prepare(db.get(), "INSERT OR REPLACE INTO fingerprints(tensor_id, kind, data) VALUES(?,?,?)"));
    for (const auto& [tensor_id, fp] : fingerprints) {
      const std::string blob = EncodeFingerprint(fp);
      st.BindInt(1, tensor_id);
      st.BindText(2, kFingerprintKind);
      sqlite3_bind_blob(st.get(), 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      MAGNETON_RETURN_IF_ERROR(st.Run(db.get()));
    }
    return Status::Ok();
  });
}

}  // namespace magneton
