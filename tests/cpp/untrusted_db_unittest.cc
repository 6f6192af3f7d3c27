// A trace's SQLite schema is the sender's too: a table swapped for a view
// that never ends, or a trigger, is refused with a reason before any row is
// read, and any query is bounded by the file's size (trace/untrusted_db.h).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>

#include "magneton/trace_reader.h"
#include "test_util.h"
#include "trace/control_chars.h"
#include "trace/untrusted_db.h"

namespace magneton {
namespace {

using testing::ExecSql;
using testing::WriteSampleTrace;

constexpr const char* kEndless =
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT 'k' || x AS key, 'v' AS value FROM n";

TEST(UntrustedDb, ATableSwappedForAnEndlessViewIsRefused) {
  const std::string path = WriteSampleTrace("endless_meta.mtrace");
  ExecSql(path, (std::string("DROP TABLE meta; CREATE VIEW meta AS ") + kEndless).c_str());
  const auto start = std::chrono::steady_clock::now();
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'meta' is a view, where magneton writes a table"), std::string::npos)
      << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(UntrustedDb, ATriggerIsRefused) {
  const std::string path = WriteSampleTrace("trigger.mtrace");
  ExecSql(path, "CREATE TRIGGER t AFTER INSERT ON op_replays BEGIN DELETE FROM meta; END;");
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("trigger"), std::string::npos) << r.status().message();
}

TEST(UntrustedDb, AViewMagnetonDoesNotWriteIsRefused) {
  const std::string path = WriteSampleTrace("extra_view.mtrace");
  ExecSql(path, (std::string("CREATE VIEW extra AS ") + kEndless).c_str());
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("view magneton does not write ('extra')"), std::string::npos);
}

// The positive twin: a trace as the writer made it reads.
TEST(UntrustedDb, ATraceAsWrittenReads) {
  auto r = ReadTrace(WriteSampleTrace("plain.mtrace"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->ops.empty());
}

TEST(UntrustedDb, AQueryThatWouldNotEndIsInterrupted) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  {
    sqlite::QueryBudget budget(db, /*steps_per_page=*/0, /*floor_steps=*/5'000'000);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n",
                                 -1, &s, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_INTERRUPT);
    sqlite3_finalize(s);
    EXPECT_TRUE(budget.exhausted());
    EXPECT_NE(budget.Exceeded("t.mtrace").message().find("SQLite steps"), std::string::npos);
  }
  {
    sqlite::QueryBudget budget(db, 0, 5'000'000);  // a bounded query of the same kind finishes under it
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000) "
                                     "SELECT max(x) FROM n",
                                 -1, &s, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(s, 0), 1000);
    sqlite3_finalize(s);
    EXPECT_FALSE(budget.exhausted());
  }
  sqlite3_close(db);
}

// An op name that would set the terminal's clipboard (OSC 52) or move the
// cursor prints as data; the reader says how many it replaced.
TEST(UntrustedDb, ControlCharactersInTextAreNeutralized) {
  const std::string path = WriteSampleTrace("escapes.mtrace");
  ExecSql(path, "UPDATE strings SET value = char(27) || ']52;c;cm0gLXJmIH4=' || char(7) || 'aten::mm' || char(27) || "
                "'[2A' WHERE id = (SELECT name_id FROM op_rows LIMIT 1);"
                "UPDATE meta SET value = 'lab' || char(27) || '[31m' || char(155) || 'el' WHERE key = 'label';");
  auto r = ReadTrace(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool found = false;
  for (const std::string& s : r->strings) {
    EXPECT_EQ(s.find('\x1b'), std::string::npos) << s;
    EXPECT_EQ(s.find('\x07'), std::string::npos) << s;
    if (s == "?]52;c;cm0gLXJmIH4=?aten::mm?[2A") found = true;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(r->meta.label, "lab?[31m?el");
  EXPECT_EQ(r->meta.extra.at("reader.control_characters"), "5");
  // The positive twin: tabs and ordinary UTF-8 are text.
  std::string text = "a\tb \xc3\xa9 \xe2\x86\x92";
  EXPECT_EQ(NeutralizeControlCharacters(&text), 0u);
  EXPECT_EQ(text, "a\tb \xc3\xa9 \xe2\x86\x92");
  auto plain = ReadTrace(WriteSampleTrace("no_escapes.mtrace"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->meta.extra.count("reader.control_characters"), 0u);
}

}  // namespace
}  // namespace magneton
