#include "trace/sqlite_util.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "magneton/trace.h"

namespace magneton::sqlite {

Status ErrorFrom(sqlite3* db, int rc, std::string_view what) {
  std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  int primary = rc & 0xff;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_FORMAT) {
    return Corrupt(msg);
  }
  if (primary == SQLITE_PERM || primary == SQLITE_READONLY || primary == SQLITE_AUTH) {
    return PermissionDenied(msg);
  }
  if (primary == SQLITE_CANTOPEN) return NotFound(msg);
  return Internal(msg);
}

StatusOr<Db> Open(const std::string& path, int flags, std::string_view what) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return ErrorFrom(raw, rc, std::string(what) + " " + path);
  sqlite3_busy_timeout(raw, 5000);
  return db;
}

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return ErrorFrom(nullptr, rc, msg);
  }
  return Status::Ok();
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = o.stmt_;
    o.stmt_ = nullptr;
  }
  return *this;
}

StatusOr<Statement> Statement::Prepare(sqlite3* db, const char* sql) {
  Statement s;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s.stmt_, nullptr);
  if (rc != SQLITE_OK) return ErrorFrom(db, rc, std::string("preparing ") + sql);
  return s;
}

void Statement::BindNullableId(int index, int64_t v) {
  if (v == kNoId) {
    sqlite3_bind_null(stmt_, index);
  } else {
    sqlite3_bind_int64(stmt_, index, v);
  }
}

void Statement::BindDouble(int index, double v) {
  if (std::isnan(v)) {
    sqlite3_bind_null(stmt_, index);
  } else {
    sqlite3_bind_double(stmt_, index, v);
  }
}

Status Statement::Run(sqlite3* db) {
  int rc = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  if (rc != SQLITE_DONE) return ErrorFrom(db, rc, "writing trace");
  return Status::Ok();
}

StatusOr<bool> Statement::Step(sqlite3* db) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return ErrorFrom(db, rc, "reading trace");
}

int64_t Statement::ColumnNullableId(int i) const {
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return kNoId;
  return sqlite3_column_int64(stmt_, i);
}

double Statement::ColumnDouble(int i) const {
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, i);
}

std::string Statement::ColumnText(int i) const {
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  int n = sqlite3_column_bytes(stmt_, i);
  return text ? std::string(reinterpret_cast<const char*>(text), n) : std::string();
}

std::string JoinInts(const std::vector<int64_t>& values) {
  std::string out;
  JoinInts(values, &out);
  return out;
}

void JoinInts(std::span<const int64_t> values, std::string* out) {
  out->clear();
  char buf[24];
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out->push_back(',');
    auto res = std::to_chars(buf, buf + sizeof(buf), values[i]);
    out->append(buf, res.ptr);
  }
}

bool SplitInts(std::string_view text, std::vector<int64_t>* out) {
  out->clear();
  if (text.empty()) return true;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    int64_t v = 0;
    auto res = std::from_chars(text.data() + pos, text.data() + comma, v);
    if (res.ec != std::errc() || res.ptr != text.data() + comma) return false;
    out->push_back(v);
    pos = comma + 1;
  }
  return true;
}

StatusOr<std::vector<std::string>> ColumnsOf(sqlite3* db, const char* table) {
  MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db, (std::string("PRAGMA table_info(") + table + ")").c_str()));
  std::vector<std::string> out;
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db));
    if (!row) break;
    out.push_back(s.ColumnText(1));
  }
  return out;
}

}  // namespace magneton::sqlite
