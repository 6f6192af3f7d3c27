// The C example, built as a C program against the C ABI, records a trace
// that the C++ reader understands: ops, scopes, dataflow and fingerprints.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cstdlib>

#include "fingerprint/fingerprint_map.h"
#include "magneton/c_api.h"
#include "magneton/trace_reader.h"
#include "test_util.h"

namespace magneton {
namespace {

TEST(CApi, ExampleProgramRecordsATrace) {
  std::string path = testing::TempPath("c.mtrace");
  std::string cmd = std::string(MAGNETON_C_EXAMPLE) + " " + path + " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->meta.engine, "native-c");
  EXPECT_EQ(trace->meta.label, "c-example");
  // The two layers, and the recorder's fingerprinting (--values) as its own
  // ops: the copies nested in them, the fingerprint thread's work at the top
  // of its own thread.
  std::vector<OpEvent> layers;
  int recorder_ops = 0, fingerprint_thread_ops = 0;
  for (const OpEvent& op : trace->ops) {
    if (!IsRecorderOp(*trace, op)) {
      layers.push_back(op);
      continue;
    }
    EXPECT_EQ(trace->str(op.name_id), "magneton::fingerprint");
    if (op.parent_id == kNoId) {
      ++fingerprint_thread_ops;
      continue;
    }
    ++recorder_ops;
    const OpEvent& parent = trace->ops[op.parent_id];
    EXPECT_GE(op.start_ns, parent.start_ns);
    EXPECT_LE(op.end_ns, parent.end_ns);
  }
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].args, R"([{"t":0},{"t":1}])");
  EXPECT_GE(recorder_ops, 4);  // one per fingerprinted value
  EXPECT_GE(fingerprint_thread_ops, 1);
  for (const OpEvent& op : trace->ops) {
    if (IsRecorderOp(*trace, op) && op.parent_id == kNoId) EXPECT_NE(op.thread_id, layers[0].thread_id);
  }
  EXPECT_EQ(trace->str(layers[0].name_id), "native::matmul_relu");
  EXPECT_EQ(trace->ScopePath(layers[0].scope_id), "blk.0");
  EXPECT_EQ(trace->ScopePath(layers[1].scope_id), "blk.1");
  // Layer 0's output is layer 1's input: one tensor id.
  int64_t out0 = kNoId, in1 = kNoId;
  for (const OpTensor& l : trace->op_tensors) {
    if (l.op_id == layers[0].id && l.role == TensorRole::kOutput) out0 = l.tensor_id;
    if (l.op_id == layers[1].id && l.role == TensorRole::kInput && l.slot == 0) in1 = l.tensor_id;
  }
  ASSERT_NE(out0, kNoId);
  EXPECT_EQ(out0, in1);
  ASSERT_EQ(trace->config.size(), 1u);
  EXPECT_EQ(trace->config[0].key, "runtime.threads");
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(fps.ok()) << fps.status().message();
  EXPECT_GE(fps->size(), 4u);  // x, w0, h, w1 (and y)
}

// Arguments that are op-arguments JSON are stored as given; other text is
// kept whole as {"unparsed": ...}, counted in meta and reported, never lost.
TEST(CApi, ArgumentsAreCheckedAndBadTextIsKeptAndCounted) {
  std::string path = testing::TempPath("capi_args.mtrace");
  ASSERT_EQ(magneton_start(path.c_str(), "args", "native", 0, 0), 0) << magneton_last_error();
  const char* good = R"({"name":"it's \"x\", y","src":[1,0]})";
  magneton_begin_op("native::good");
  magneton_end_op(good);
  EXPECT_STREQ(magneton_last_error(), "");
  magneton_begin_op("native::old_style");
  magneton_end_op("name=x src=1,0");
  EXPECT_NE(std::string(magneton_last_error()).find("not JSON"), std::string::npos) << magneton_last_error();
  magneton_begin_op("native::bad_tag");
  const int64_t t0 = magneton_now_ns();
  magneton_end_op_at(R"([{"tensor":0}])", t0, t0 + 1000);
  magneton_begin_op("native::none");
  magneton_end_op(nullptr);
  ASSERT_EQ(magneton_stop(), 0) << magneton_last_error();

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->ops.size(), 4u);
  EXPECT_EQ(trace->ops[0].args, good);
  EXPECT_EQ(trace->ops[1].args, R"({"unparsed":"name=x src=1,0"})");
  EXPECT_EQ(trace->ops[2].args, R"({"unparsed":"[{\"tensor\":0}]"})");
  EXPECT_EQ(trace->ops[3].args, "");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'capi.unparsed_args'", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "2");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// Each failure comes back as its declared code, with the reason, and an
// accepted call as MAGNETON_OK with the reason cleared.
TEST(CApi, ReturnsTheDeclaredStatusCodes) {
  EXPECT_EQ(magneton_stop(), MAGNETON_FAILED_PRECONDITION);
  EXPECT_NE(std::string(magneton_last_error()).find("no recording is active"), std::string::npos)
      << magneton_last_error();
  EXPECT_EQ(magneton_start(nullptr, "x", "native-c", 0, 0), MAGNETON_INVALID_ARGUMENT);
  EXPECT_NE(std::string(magneton_last_error()).find("path is NULL"), std::string::npos) << magneton_last_error();
  std::string missing_dir = testing::TempPath("no-such-dir") + "/sub/x.mtrace";
  const int missing = magneton_start(missing_dir.c_str(), "x", "native-c", 0, 0);
  EXPECT_EQ(missing, MAGNETON_NOT_FOUND) << magneton_last_error();
  EXPECT_EQ(magneton_is_recording(), 0);

  std::string path = testing::TempPath("codes.mtrace");
  ASSERT_EQ(magneton_start(path.c_str(), "x", "native-c", 0, 0), MAGNETON_OK) << magneton_last_error();
  EXPECT_STREQ(magneton_last_error(), "");
  EXPECT_EQ(magneton_is_recording(), 1);
  EXPECT_EQ(magneton_start(path.c_str(), "x", "native-c", 0, 0), MAGNETON_FAILED_PRECONDITION);
  EXPECT_NE(std::string(magneton_last_error()).find("already active"), std::string::npos) << magneton_last_error();
  EXPECT_EQ(magneton_stop(), MAGNETON_OK);
  EXPECT_EQ(magneton_is_recording(), 0);
  EXPECT_TRUE(ReadTrace(path).ok());
}

}  // namespace
}  // namespace magneton
