// Bad input gets a clear error, never a crash: missing, foreign, truncated,
// mutated and wrong-version files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <random>

#include "magneton/trace_reader.h"
#include "report/summary.h"
#include "test_util.h"
#include "trace/trace_validate.h"

namespace magneton {
namespace {

using testing::DowngradeToSchemaV2;
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
      // And whole: the reader's row checks give every structural invariant.
      Status valid = ValidateTraceStructure(*r);
      ASSERT_TRUE(valid.ok()) << valid.message();
    } else {
      ++errors;
      EXPECT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_EQ(errors + oks, 300);
}


// --- Structure (issue 33): a hostile trace is refused by the reader, with the
// table, the row and what is wrong, before any analysis walks it. Each case's
// positive twin is the unedited sample, which reads.

// The message of reading `path`, which must be refused as corrupt.
std::string Refusal(const std::string& path) {
  auto r = ReadTrace(path);
  EXPECT_FALSE(r.ok()) << path << " was accepted";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  return r.status().message();
}

std::string EditedSample(const std::string& name, const char* sql) {
  std::string path = WriteSampleTrace(name, 6);
  EXPECT_TRUE(ReadTrace(path).ok());  // the twin, before the edit
  ExecSql(path, sql);
  return path;
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// parent_back 0 made op 3 its own parent: `magneton diff` spun forever in
// the dataflow graph's walk to the root.
// The closing summary of `magneton record` counts without loading the trace:
// the same counts as the loaded trace, on either schema version, and the
// same refusals.
TEST(TraceCounts, CountsWhatTheLoadedTraceHolds) {
  for (const bool v2 : {false, true}) {
    std::string path = WriteSampleTrace(v2 ? "counts_v2.mtrace" : "counts.mtrace", 37);
    if (v2) DowngradeToSchemaV2(path);
    auto trace = ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    auto counts = ReadTraceCounts(path);
    ASSERT_TRUE(counts.ok()) << counts.status().message();
    EXPECT_EQ(counts->ops, trace->ops.size());
    EXPECT_GT(counts->ops, 0u);
    EXPECT_EQ(counts->tensors, trace->tensors.size());
    EXPECT_EQ(counts->device_activities, trace->device_activities.size());
    EXPECT_EQ(counts->meta.label, trace->meta.label);
    EXPECT_EQ(counts->meta.extra, trace->meta.extra);
  }
  std::string text = TempPath("counts_notes.mtrace");
  WriteBytes(text, {'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(ReadTraceCounts(text).status().code(), StatusCode::kCorrupt);
  std::string foreign = TempPath("counts_other.db");
  ExecSql(foreign, "CREATE TABLE people(name TEXT); INSERT INTO people VALUES('x');");
  auto r = ReadTraceCounts(foreign);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("not a Magneton trace"), std::string::npos) << r.status().message();
  std::string future = WriteSampleTrace("counts_future.mtrace", 3);
  ExecSql(future, "UPDATE meta SET value='99' WHERE key='schema_version'");
  EXPECT_EQ(ReadTraceCounts(future).status().code(), ReadTrace(future).status().code());
  EXPECT_FALSE(ReadTraceCounts(future).ok());
  EXPECT_EQ(ReadTraceCounts(TempPath("counts_nope.mtrace")).status().code(), StatusCode::kNotFound);
}

TEST(TraceReaderStructure, ParentBackZeroIsRefused) {
  const std::string m = Refusal(EditedSample("pb0.mtrace", "UPDATE op_rows SET parent_back=0 WHERE id=3"));
  EXPECT_HAS(m, "table op_rows, row id 3: parent_back 0 is not positive");
  EXPECT_HAS(m, "its own parent");
  EXPECT_HAS(m, "pb0.mtrace");
}

TEST(TraceReaderStructure, NegativeParentBackIsRefused) {
  const std::string m = Refusal(EditedSample("pbneg.mtrace", "UPDATE op_rows SET parent_back=-2 WHERE id=1"));
  EXPECT_HAS(m, "table op_rows, row id 1: parent_back -2 is not positive");
  EXPECT_HAS(m, "later op");
}

// More than the op's id: a parent before op 0 (id - back = -1 was read as "no
// parent" before; anything lower was refused without saying why).
TEST(TraceReaderStructure, ParentBackBeyondTheFirstOpIsRefused) {
  for (const char* back : {"6", "7", "1099511627776", "9223372036854775807"}) {
    const std::string sql = std::string("UPDATE op_rows SET parent_back=") + back + " WHERE id=5";
    const std::string m = Refusal(EditedSample(std::string("pbbig") + back + ".mtrace", sql.c_str()));
    EXPECT_HAS(m, std::string("table op_rows, row id 5: parent_back ") + back);
    EXPECT_HAS(m, "before the first op");
  }
}

TEST(TraceReaderStructure, VersionTwoOpParentAtOrAfterTheOpIsRefused) {
  for (const char* parent : {"id", "id + 1"}) {
    std::string path = WriteSampleTrace(std::string("v2parent") + (parent[2] ? "later" : "self") + ".mtrace", 6);
    DowngradeToSchemaV2(path);
    ASSERT_TRUE(ReadTrace(path).ok());
    ExecSql(path, (std::string("UPDATE ops SET parent_id = ") + parent + " WHERE id = 2").c_str());
    const std::string m = Refusal(path);
    EXPECT_HAS(m, "table ops, row id 2: parent_id");
  }
}

TEST(TraceReaderStructure, ScopeCycleIsRefused) {
  std::string m = Refusal(EditedSample("scopeself.mtrace", "UPDATE scopes SET parent_id=id WHERE id=1"));
  EXPECT_HAS(m, "table scopes, row id 1: parent_id 1 names the row itself (a cycle)");
  // 0 -> 1 -> 0.
  m = Refusal(EditedSample("scopecycle.mtrace", "UPDATE scopes SET parent_id=1 WHERE id=0"));
  EXPECT_HAS(m, "table scopes, row id 0: parent_id 1 names a later row");
  m = Refusal(EditedSample("scopeneg.mtrace", "UPDATE scopes SET parent_id=-7 WHERE id=1"));
  EXPECT_HAS(m, "table scopes, row id 1: parent_id -7 is negative");
}

TEST(TraceReaderStructure, CallPathCycleIsRefused) {
  std::string m = Refusal(EditedSample("cpcycle.mtrace", "UPDATE call_paths SET parent_id=1 WHERE id=0"));
  EXPECT_HAS(m, "table call_paths, row id 0: parent_id 1 names a later row");
  m = Refusal(EditedSample("cpself.mtrace", "UPDATE call_paths SET parent_id=id WHERE id=1"));
  EXPECT_HAS(m, "table call_paths, row id 1: parent_id 1 names the row itself");
  m = Refusal(EditedSample("cpframe.mtrace", "UPDATE call_paths SET frame_id=99 WHERE id=1"));
  EXPECT_HAS(m, "table call_paths, row id 1: frame_id 99 names no frame");
}

// Found by fuzz/analysis_diff_fuzzer.cc: a negative id was used in
// arithmetic (id - parent_back, UBSan: signed overflow) before it was
// refused; an end past INT64_MAX overflowed likewise.
TEST(TraceReaderStructure, NegativeOpIdAndOverflowingTimesAreRefused) {
  std::string m = Refusal(EditedSample("negid.mtrace", "UPDATE op_rows SET id = -9223372036854775806 WHERE id = 3"));
  EXPECT_HAS(m, "table op_rows, row id -9223372036854775806: the id is negative");
  m = Refusal(EditedSample("endoverflow.mtrace",
                           "UPDATE op_rows SET start_ns = 9223372036854775800, duration_ns = 100 WHERE id = 2"));
  EXPECT_HAS(m, "table op_rows, row id 2: start_ns + duration_ns is beyond any clock");
}

// A file whose op_rows lost its primary key can hold one id twice.
TEST(TraceReaderStructure, RepeatedOpIdIsRefused) {
  const std::string m = Refusal(EditedSample("dupop.mtrace",
                                             "DROP VIEW ops; DROP VIEW op_tensors;"
                                             "CREATE TABLE op_copy AS SELECT * FROM op_rows; DROP TABLE op_rows;"
                                             "CREATE TABLE op_rows AS SELECT * FROM op_copy; DROP TABLE op_copy;"
                                             "INSERT INTO op_rows SELECT * FROM op_rows WHERE id = 4;"));
  EXPECT_HAS(m, "table op_rows, row id 4: the id repeats");
}

// The reader still cuts what a killed run legitimately leaves dangling (an
// enclosing op that never ended), and the result is valid structure.
TEST(TraceReaderStructure, MissingParentOfAKilledRunIsCutNotRefused) {
  std::string path = EditedSample("killedparent.mtrace", "DELETE FROM op_rows WHERE id = 2");
  auto r = ReadTrace(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const OpEvent& op : r->ops) EXPECT_NE(op.parent_id, 2);
  EXPECT_TRUE(ValidateTraceStructure(*r).ok());
}

// The same invariants on a Trace built in memory (a binding, a test): the
// first violation, by table and row.
TEST(TraceValidate, InMemoryViolationsAreNamed) {
  auto sample = ReadTrace(WriteSampleTrace("mem.mtrace", 6));
  ASSERT_TRUE(sample.ok());
  ASSERT_TRUE(ValidateTraceStructure(*sample).ok());
  ASSERT_GE(sample->scopes.size(), 2u);
  ASSERT_GE(sample->call_paths.size(), 2u);
  struct Case {
    const char* want;
    std::function<void(Trace&)> edit;
  };
  const std::vector<Case> cases = {
      {"ops row id 3: parent_id 3 names the row itself", [](Trace& t) { t.ops[3].parent_id = 3; }},
      {"ops row id 1: parent_id 4 names a later row", [](Trace& t) { t.ops[1].parent_id = 4; }},
      {"ops row id 2: parent_id -3 is negative", [](Trace& t) { t.ops[2].parent_id = -3; }},
      {"ops row id 1: the id repeats", [](Trace& t) { t.ops[2].id = 1; }},
      {"ops row id 1: ops are not in id order",
       [](Trace& t) {
         std::swap(t.ops[1].id, t.ops[2].id);
         t.ops[1].parent_id = t.ops[2].parent_id = kNoId;
       }},
      {"ops row id 4: scope_id 9 names no scope", [](Trace& t) { t.ops[4].scope_id = 9; }},
      {"ops row id 4: call_path_id -2 names no call path", [](Trace& t) { t.ops[4].call_path_id = -2; }},
      {"scopes row id 0: parent_id 1 names a later row", [](Trace& t) { t.scopes[0].parent_id = 1; }},
      {"scopes row id 1: parent_id 1 names the row itself", [](Trace& t) { t.scopes[1].parent_id = 1; }},
      {"call_paths row id 0: parent_id 1 names a later row", [](Trace& t) { t.call_paths[0].parent_id = 1; }},
      {"call_paths row id 1: frame_id 50 names no frame", [](Trace& t) { t.call_paths[1].frame_id = 50; }},
      {"tensors row id 0: producer_op_id 99 names no op", [](Trace& t) { t.tensors[0].producer_op_id = 99; }},
      {"tensors row id 7: ids are not 0, 1, 2, ... (at index 1)", [](Trace& t) { t.tensors[1].id = 7; }},
      {"op_tensors link 0 (op 99): names no op", [](Trace& t) { t.op_tensors[0].op_id = 99; }},
      {"op_tensors link 1 (op 0): tensor id 1234 names no tensor", [](Trace& t) { t.op_tensors[1].tensor_id = 1234; }},
      {"not sorted by (op, role, slot)", [](Trace& t) { std::swap(t.op_tensors.front(), t.op_tensors.back()); }},
  };
  for (const Case& c : cases) {
    Trace t = *sample;
    c.edit(t);
    Status st = ValidateTraceStructure(t);
    ASSERT_FALSE(st.ok()) << c.want;
    EXPECT_EQ(st.code(), StatusCode::kCorrupt);
    EXPECT_HAS(st.message(), c.want);
  }
}

// `magneton show` reads neither tensor rows nor op arguments (ReadOptions):
// the same ops and links, the tensors counted, and the very summary text of
// a full read. The rows it skips are still checked where the links depend on
// them: a gap in the tensor ids, a missing layout.
TEST(TraceReaderErrors, ASummaryReadSkipsTensorsAndArgumentsAndStillChecksTheirIds) {
  const std::string path = WriteSampleTrace("light.mtrace", 40);
  auto full = ReadTrace(path);
  auto light = ReadTrace(path, ReadOptions{.tensors = false, .op_args = false});
  ASSERT_TRUE(full.ok() && light.ok()) << light.status().message();
  ASSERT_FALSE(full->tensors.empty());
  EXPECT_TRUE(light->tensors.empty());
  EXPECT_EQ(light->tensors_not_read, full->tensors.size());
  EXPECT_EQ(full->tensors_not_read, 0u);
  ASSERT_EQ(light->ops.size(), full->ops.size());
  size_t args = 0;
  for (size_t i = 0; i < full->ops.size(); ++i) {
    EXPECT_EQ(light->ops[i].id, full->ops[i].id);
    EXPECT_EQ(light->ops[i].name_id, full->ops[i].name_id);
    EXPECT_EQ(light->ops[i].end_ns, full->ops[i].end_ns);
    EXPECT_TRUE(light->ops[i].args.empty());
    args += !full->ops[i].args.empty();
  }
  EXPECT_GT(args, 0u);
  EXPECT_EQ(light->op_tensors.size(), full->op_tensors.size());
  EXPECT_EQ(FormatSummary(*light, 10), FormatSummary(*full, 10));

  const std::string gap = WriteSampleTrace("light_gap.mtrace", 40);
  ExecSql(gap, "UPDATE tensor_rows SET id = id + 1000 WHERE id = (SELECT max(id) FROM tensor_rows)");
  auto r = ReadTrace(gap, ReadOptions{.tensors = false});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("gap or duplicate"), std::string::npos) << r.status().message();
  EXPECT_FALSE(ReadTrace(gap).ok());  // as the full read says

  const std::string layout = WriteSampleTrace("light_layout.mtrace", 40);
  ExecSql(layout, "UPDATE tensor_rows SET layout_id = 999999 WHERE id = 0");
  r = ReadTrace(layout, ReadOptions{.tensors = false});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing layout"), std::string::npos) << r.status().message();
  EXPECT_FALSE(ReadTrace(layout).ok());
}

}  // namespace
}  // namespace magneton
