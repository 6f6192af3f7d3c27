#include "trace/untrusted_db.h"

#include <algorithm>
#include <set>

#include "trace/schema.h"
#include "trace/sqlite_util.h"

namespace magneton::sqlite {
namespace {

constexpr int kStepsPerCallback = 10'000;

}  // namespace

Status HardenUntrustedDb(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  std::set<std::string> views;  // the names magneton writes as views (version 3)
  for (const schema::Table& t : schema::AllTables()) {
    if (t.view_sql) views.insert(t.name);
  }
  views.insert("op_tensors");
  std::set<std::string> tables;
  for (const schema::Table& t : schema::AllTables()) {
    if (!t.view_sql) tables.insert(t.name);
  }
  MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db, "SELECT type, name FROM sqlite_master"));
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db));
    if (!row) break;
    const std::string type = s.ColumnText(0), name = s.ColumnText(1);
    if (type == "trigger") {
      return InvalidArgument("it holds a trigger ('" + name + "'): magneton writes none, so it was made or edited "
                             "by something else");
    }
    if (type == "view" && tables.count(name) > 0) {
      return InvalidArgument("'" + name + "' is a view, where magneton writes a table: it was made or edited by "
                             "something else");
    }
    if (type == "view" && views.count(name) == 0) {
      return InvalidArgument("it holds a view magneton does not write ('" + name + "')");
    }
  }
  return Status::Ok();
}

QueryBudget::QueryBudget(sqlite3* db, int64_t steps_per_page, int64_t floor_steps) : db_(db) {
  int64_t pages = 0;
  if (auto s = Statement::Prepare(db, "PRAGMA page_count"); s.ok()) {
    if (auto row = s->Step(db); row.ok() && *row) pages = s->ColumnInt(0);
  }
  limit_steps_ = floor_steps + steps_per_page * std::max<int64_t>(pages, 0);
  sqlite3_progress_handler(db_, kStepsPerCallback, &QueryBudget::OnProgress, this);
}

QueryBudget::~QueryBudget() { sqlite3_progress_handler(db_, 0, nullptr, nullptr); }

int QueryBudget::OnProgress(void* self) {
  auto* b = static_cast<QueryBudget*>(self);
  b->used_steps_ += kStepsPerCallback;
  if (b->used_steps_ <= b->limit_steps_) return 0;
  b->exhausted_ = true;
  return 1;  // interrupts the statement: SQLITE_INTERRUPT
}

Status QueryBudget::Exceeded(const std::string& what) const {
  return InvalidArgument(what + ": reading it took more than " + std::to_string(limit_steps_) +
                         " SQLite steps, far more than a trace of its size needs; its schema was not written by "
                         "magneton (a view or query that does not end?)");
}

}  // namespace magneton::sqlite
