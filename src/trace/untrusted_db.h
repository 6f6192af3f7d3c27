// Reading a trace someone else wrote: the SQLite file's schema is theirs too.
// A table replaced by a view (a recursive CTE that never ends), a trigger, or
// a function with side effects in a view must neither hang the reader nor do
// anything but give rows (docs/SECURITY.md, "Bounded analysis").
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "magneton/status.h"

namespace magneton::sqlite {

// Turns on SQLite's defences for a file of unknown origin (defensive mode, no
// untrusted schema functions, no triggers) and checks its schema objects: no
// triggers, and every table the reader reads (`view_names` excepted: the
// views magneton itself writes) is a table, not a view.
Status HardenUntrustedDb(sqlite3* db);

// A bound on the SQLite VM steps of the statements run while it lives,
// scaled with the file's size (steps_per_page per page, plus a floor): a
// query of a legitimate trace stays far below it, a query that would not
// end is interrupted. exhausted() says whether it fired.
class QueryBudget {
 public:
  explicit QueryBudget(sqlite3* db, int64_t steps_per_page = 1'000'000, int64_t floor_steps = 1'000'000'000);
  ~QueryBudget();
  QueryBudget(const QueryBudget&) = delete;
  QueryBudget& operator=(const QueryBudget&) = delete;
  bool exhausted() const { return exhausted_; }
  int64_t limit_steps() const { return limit_steps_; }
  // The error for a read that the budget interrupted.
  Status Exceeded(const std::string& what) const;

 private:
  static int OnProgress(void* self);
  sqlite3* db_;
  int64_t limit_steps_ = 0;
  int64_t used_steps_ = 0;
  bool exhausted_ = false;
};

}  // namespace magneton::sqlite
