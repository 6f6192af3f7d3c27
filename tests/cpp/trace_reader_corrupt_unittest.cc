// Bad input gets a clear error, never a crash: missing, foreign, truncated,
// mutated and wrong-version files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>

#include "magneton/trace_reader.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::ReadBytes;
using testing::ExecSql;
using testing::TempPath;
using testing::WriteBytes;
using testing::WriteSampleTrace;

TEST(TraceReaderErrors, MissingFile) {
  auto r = ReadTrace(TempPath("nope.mtrace"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

TEST(TraceReaderErrors, Directory) {
  std::string dir = TempPath("dir");
  std::filesystem::create_directories(dir);
  auto r = ReadTrace(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceReaderErrors, TextFileIsNotATrace) {
  std::string path = TempPath("notes.mtrace");
  WriteBytes(path, {'h', 'e', 'l', 'l', 'o'});
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("not a Magneton trace"), std::string::npos) << r.status().message();
}

TEST(TraceReaderErrors, ForeignSqliteDatabase) {
  std::string path = TempPath("other.db");
  ExecSql(path, "CREATE TABLE people(name TEXT); INSERT INTO people VALUES('x');");
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("not a Magneton trace"), std::string::npos) << r.status().message();
}

TEST(TraceReaderErrors, NewerSchemaVersionIsRefusedByName) {
  std::string path = WriteSampleTrace("future.mtrace", 3);
  ExecSql(path, "UPDATE meta SET value='99' WHERE key='schema_version'");
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kVersionMismatch);
  EXPECT_NE(r.status().message().find("version 99"), std::string::npos) << r.status().message();
}

// Version 1 stored op arguments as unescaped text: one line that says to
// re-record, and the current version (the positive twin) reads.
TEST(TraceReaderErrors, VersionOneIsRefusedWithWhatToDo) {
  std::string path = WriteSampleTrace("v1.mtrace", 3);
  ASSERT_TRUE(ReadTrace(path).ok());
  ExecSql(path, "UPDATE meta SET value='1' WHERE key='schema_version'");
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kVersionMismatch);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("schema version 1"), std::string::npos) << m;
  EXPECT_NE(m.find("re-record"), std::string::npos) << m;
  EXPECT_NE(m.find("version " + std::to_string(kTraceSchemaVersion)), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(TraceReaderErrors, DanglingReferenceIsCorrupt) {
  std::string path = WriteSampleTrace("dangling.mtrace", 3);
  ExecSql(path, "UPDATE op_rows SET name_id=99999 WHERE id=0");
  auto r = ReadTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("op 0"), std::string::npos) << r.status().message();
}

TEST(TraceReaderErrors, TruncatedFilesNeverCrash) {
  std::string path = WriteSampleTrace("full.mtrace", 40);
  std::vector<char> bytes = ReadBytes(path);
  ASSERT_GT(bytes.size(), 4096u);
  int errors = 0;
  for (size_t cut : {size_t{0}, size_t{10}, size_t{100}, size_t{1024}, bytes.size() / 2, bytes.size() - 1}) {
    std::string p = TempPath("cut" + std::to_string(cut) + ".mtrace");
    WriteBytes(p, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(cut)));
    auto r = ReadTrace(p);
    if (!r.ok()) {
      ++errors;
      EXPECT_FALSE(r.status().message().empty());
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line: " << r.status().message();
    }
  }
  EXPECT_GE(errors, 4);
}

TEST(TraceReaderErrors, RandomlyMutatedFilesNeverCrash) {
  std::string path = WriteSampleTrace("seed.mtrace", 40);
  const std::vector<char> original = ReadBytes(path);
  std::mt19937 rng(12345);
  int errors = 0, oks = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<char> bytes = original;
    int flips = 1 + static_cast<int>(rng() % 16);
    for (int i = 0; i < flips; ++i) {
      size_t at = rng() % bytes.size();
      bytes[at] = static_cast<char>(rng() & 0xff);
    }
    auto r = ReadTraceFromBytes(bytes.data(), bytes.size());
    if (r.ok()) {
      ++oks;
      // Whatever is accepted must be internally consistent.
      for (const OpEvent& op : r->ops) {
        ASSERT_GE(op.name_id, 0);
        ASSERT_LT(static_cast<size_t>(op.name_id), r->strings.size());
        ASSERT_GE(op.end_ns, op.start_ns);
      }
      for (const OpTensor& l : r->op_tensors) ASSERT_LT(static_cast<size_t>(l.tensor_id), r->tensors.size());
    } else {
      ++errors;
      EXPECT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_EQ(errors + oks, 300);
}

}  // namespace
}  // namespace magneton
