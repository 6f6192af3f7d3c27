// Runtime state per op (Trace::runtime_states, Trace::state_setters,
// OpEvent::state_id): interning in the recorder, the round trip through the
// writer and reader, traces written before the tables existed, and the
// getenv interposer that finds the environment names native code reads.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <thread>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "record/env_reads.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::ExecSql;
using testing::TempPath;

const std::map<std::string, std::string> kFourThreads = {{"torch.num_threads", "4"}, {"torch.grad_enabled", "true"}};
const std::map<std::string, std::string> kOneThread = {{"torch.num_threads", "1"}, {"torch.grad_enabled", "true"}};

void RecordOp(Recorder& rec, int64_t name_id) {
  rec.BeginOp(name_id, kNoId);
  rec.EndOp("[]");
}

// Three top-level ops: under 4 threads, under 1 thread, and under 4 again
// (the first state's id, not a new one); a nested op inherits its parent's
// state; one setter; one op on another thread that never set a state.
std::string WriteStateTrace(const std::string& name) {
  std::string path = TempPath(name);
  RunMetadata meta;
  meta.label = "states";
  EXPECT_TRUE(Recorder::Start(path, meta).ok());
  Recorder& rec = *Recorder::Active();
  const int64_t add = rec.InternString("aten::add");
  const int64_t four = rec.InternRuntimeState(kFourThreads);
  rec.SetThreadStateId(four);
  RecordOp(rec, add);
  const int64_t one = rec.InternRuntimeState(kOneThread);
  EXPECT_NE(one, four);
  rec.SetThreadStateId(one);
  rec.AddStateSetter({"torch.num_threads", "1", "script.py:7:main", 0, 0});
  rec.BeginOp(add, kNoId);
  RecordOp(rec, add);  // nested
  rec.EndOp("[]");
  EXPECT_EQ(rec.InternRuntimeState(kFourThreads), four);
  rec.SetThreadStateId(four);
  RecordOp(rec, add);
  std::thread other([&] { RecordOp(rec, add); });
  other.join();
  EXPECT_TRUE(Recorder::Stop().ok());
  return path;
}

TEST(RuntimeState, OpsCarryTheStateInEffectWhenTheyBegan) {
  auto trace = ReadTrace(WriteStateTrace("states.mtrace"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->runtime_states.size(), 2u);
  EXPECT_EQ(trace->runtime_states[0].values, kFourThreads);
  EXPECT_EQ(trace->runtime_states[1].values, kOneThread);
  ASSERT_EQ(trace->ops.size(), 5u);
  // Ops are written when they end: find them by id.
  auto state_of = [&](int64_t op_id) { return trace->ops[op_id].state_id; };
  EXPECT_EQ(state_of(0), 0);
  EXPECT_EQ(state_of(1), 1);  // outer
  EXPECT_EQ(state_of(2), 1);  // nested
  EXPECT_EQ(state_of(3), 0);
  EXPECT_EQ(state_of(4), kNoId);  // the other thread set none
  ASSERT_EQ(trace->state_setters.size(), 1u);
  const StateSetter& s = trace->state_setters[0];
  EXPECT_EQ(s.key, "torch.num_threads");
  EXPECT_EQ(s.value, "1");
  EXPECT_EQ(s.where, "script.py:7:main");
  EXPECT_GT(s.t_ns, 0);
  EXPECT_GT(s.thread_id, 0);
}

TEST(RuntimeState, ANewSessionStartsEveryThreadWithoutAState) {
  WriteStateTrace("first.mtrace");
  std::string path = TempPath("second.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  RecordOp(*Recorder::Active(), Recorder::Active()->InternString("aten::mul"));
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(trace->runtime_states.empty());
  ASSERT_EQ(trace->ops.size(), 1u);
  EXPECT_EQ(trace->ops[0].state_id, kNoId);
}

TEST(RuntimeState, SecretLookingValuesAreRedacted) {
  std::string path = TempPath("secret.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder& rec = *Recorder::Active();
  rec.InternRuntimeState({{"ort.session.0.config.api_key", "sk-123"}, {"ort.session.0.intra_op_num_threads", "2"}});
  rec.AddStateSetter({"ort.session.0.config.api_key", "sk-123", "a.py:1:f", 0, 0});
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->runtime_states.size(), 1u);
  EXPECT_EQ(trace->runtime_states[0].values.at("ort.session.0.config.api_key"), "<redacted>");
  EXPECT_EQ(trace->runtime_states[0].values.at("ort.session.0.intra_op_num_threads"), "2");
  ASSERT_EQ(trace->state_setters.size(), 1u);
  EXPECT_EQ(trace->state_setters[0].value, "<redacted>");
}

TEST(RuntimeState, TraceWrittenBeforeRuntimeStatesStillReads) {
  std::string path = WriteStateTrace("old.mtrace");
  // The file as an older magneton wrote it: no state tables, no ops.state_id.
  testing::DowngradeToSchemaV2(path);
  ExecSql(path, "DROP TABLE runtime_states; DROP TABLE state_setters; DROP VIEW op_tensors; "
                "ALTER TABLE ops DROP COLUMN state_id;");
  ExecSql(path, R"sql(CREATE VIEW op_tensors AS
  SELECT o.id AS op_id, 0 AS role, CAST(j.key AS INTEGER) AS slot, CAST(j.value AS INTEGER) AS tensor_id
    FROM ops o, json_each('[' || o.inputs || ']') j WHERE j.value >= 0
  UNION ALL
  SELECT o.id, 1, CAST(j.key AS INTEGER), CAST(j.value AS INTEGER)
    FROM ops o, json_each('[' || o.outputs || ']') j WHERE j.value >= 0;)sql");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(trace->runtime_states.empty());
  EXPECT_TRUE(trace->state_setters.empty());
  ASSERT_EQ(trace->ops.size(), 5u);
  for (const OpEvent& op : trace->ops) EXPECT_EQ(op.state_id, kNoId);
}

TEST(RuntimeState, OpNamingAMissingStateIsCorrupt) {
  std::string path = WriteStateTrace("bad.mtrace");
  ExecSql(path, "UPDATE op_rows SET state_id = 7 WHERE id = 0");
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), StatusCode::kCorrupt);
}

TEST(EnvReads, InterposerNotesTheNamesNativeCodeReads) {
  // Not preloaded here: the recorder finds nothing to ask.
  EXPECT_FALSE(NativeEnvNamesRead().has_value());
  void* lib = dlopen(MAGNETON_GETENV_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using GetenvFn = char* (*)(const char*);
  using NamesFn = int (*)(const char**, int);
  auto interposed_getenv = reinterpret_cast<GetenvFn>(dlsym(lib, "getenv"));
  auto names = reinterpret_cast<NamesFn>(dlsym(lib, "magneton_getenv_names"));
  ASSERT_NE(interposed_getenv, nullptr);
  ASSERT_NE(names, nullptr);
  setenv("MAGNETON_TEST_READ_ME", "42", 1);
  setenv("MAGNETON_TEST_NEVER_READ", "1", 1);
  const char* value = interposed_getenv("MAGNETON_TEST_READ_ME");
  ASSERT_NE(value, nullptr);
  EXPECT_STREQ(value, "42");  // forwards the real value
  EXPECT_EQ(interposed_getenv("MAGNETON_TEST_UNSET_NAME"), nullptr);
  interposed_getenv("MAGNETON_TEST_READ_ME");  // noted once
  const char* noted[64];
  const int n = names(noted, 64);
  ASSERT_LE(n, 64);
  int read_me = 0, unset = 0, never = 0;
  for (int i = 0; i < n; ++i) {
    read_me += std::strcmp(noted[i], "MAGNETON_TEST_READ_ME") == 0;
    unset += std::strcmp(noted[i], "MAGNETON_TEST_UNSET_NAME") == 0;
    never += std::strcmp(noted[i], "MAGNETON_TEST_NEVER_READ") == 0;
  }
  EXPECT_EQ(read_me, 1);
  EXPECT_EQ(unset, 1);  // a read of an unset name is a read
  EXPECT_EQ(never, 0);
}

}  // namespace
}  // namespace magneton
