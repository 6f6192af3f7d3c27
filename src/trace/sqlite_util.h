// Small RAII helpers over the SQLite C API, shared by the writer and reader.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/status.h"

namespace magneton::sqlite {

Status Exec(sqlite3* db, const char* sql);

// Runs fn() (returning Status) inside BEGIN/COMMIT; rolls back if it fails.
template <typename Fn>
Status InTransaction(sqlite3* db, Fn&& fn) {
  MAGNETON_RETURN_IF_ERROR(Exec(db, "BEGIN"));
  Status st = fn();
  if (!st.ok()) {
    (void)Exec(db, "ROLLBACK");
    return st;
  }
  return Exec(db, "COMMIT");
}

class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& o) noexcept : stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Statement& operator=(Statement&& o) noexcept;
  static StatusOr<Statement> Prepare(sqlite3* db, const char* sql);

  void BindInt(int index, int64_t v) { sqlite3_bind_int64(stmt_, index, v); }
  void BindNullableId(int index, int64_t v);  // kNoId -> NULL
  void BindNull(int index) { sqlite3_bind_null(stmt_, index); }
  void BindDouble(int index, double v);       // NaN -> NULL
  void BindText(int index, std::string_view v) {
    sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int index, std::string_view v) {
    sqlite3_bind_blob(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // Executes a statement that returns no rows, then resets it for reuse.
  Status Run(sqlite3* db);
  // SQLITE_ROW -> true, SQLITE_DONE -> false, anything else -> error.
  StatusOr<bool> Step(sqlite3* db);

  int64_t ColumnInt(int i) const { return sqlite3_column_int64(stmt_, i); }
  int64_t ColumnNullableId(int i) const;  // NULL -> kNoId
  double ColumnDouble(int i) const;       // NULL -> NaN
  std::string ColumnText(int i) const;
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

Status ErrorFrom(sqlite3* db, int rc, std::string_view what);

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
// Opens `path` with sqlite3_open_v2 flags and a 5 s busy timeout.
StatusOr<Db> Open(const std::string& path, int flags, std::string_view what);

// The columns `table` has in this file, in its order (PRAGMA table_info).
StatusOr<std::vector<std::string>> ColumnsOf(sqlite3* db, const char* table);

std::string JoinInts(const std::vector<int64_t>& values);
// The same into *out (replacing it), reusing its capacity.
void JoinInts(std::span<const int64_t> values, std::string* out);
// Parses "1,128,768" back; false on malformed text.
bool SplitInts(std::string_view text, std::vector<int64_t>* out);

}  // namespace magneton::sqlite
