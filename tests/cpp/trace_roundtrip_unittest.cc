#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "magneton/trace_writer.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::TempPath;
using testing::WriteSampleTrace;

TEST(TraceRoundTrip, ReadsBackWhatWasRecorded) {
  std::string path = WriteSampleTrace("run.mtrace", 10);
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->meta.label, "sample");
  EXPECT_EQ(trace->meta.command_line, "python sample.py");
  EXPECT_EQ(trace->meta.versions.at("torch"), "0.0-test");
  EXPECT_GT(trace->meta.start_monotonic_ns, 0);
  ASSERT_EQ(trace->ops.size(), 20u);

  // Ops come back ordered by id; linear (even ids) encloses addmm (odd ids).
  for (size_t i = 0; i < trace->ops.size(); i += 2) {
    const OpEvent& linear = trace->ops[i];
    const OpEvent& addmm = trace->ops[i + 1];
    EXPECT_EQ(trace->str(linear.name_id), "aten::linear");
    EXPECT_EQ(trace->str(addmm.name_id), "aten::addmm");
    EXPECT_EQ(addmm.parent_id, linear.id);
    EXPECT_EQ(linear.parent_id, kNoId);
    EXPECT_LE(linear.start_ns, addmm.start_ns);
    EXPECT_GE(linear.end_ns, addmm.end_ns);
    EXPECT_EQ(trace->ScopePath(linear.scope_id), "Net/fc");
    // The nested op inherits the Python call path of the op that issued it.
    EXPECT_EQ(addmm.call_path_id, linear.call_path_id);
    EXPECT_EQ(addmm.args, R"([{"t":0},null,1,1.5])");
  }
  auto frames = trace->CallPathFrames(trace->ops[0].call_path_id);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], "model.py:10:main");
  EXPECT_EQ(frames[1], "model.py:20:forward");
  ASSERT_EQ(trace->config.size(), 2u);
  EXPECT_EQ(trace->config[0].key, "env.OMP_NUM_THREADS");
}

std::vector<int64_t> Tensors(const Trace& t, int64_t op_id, TensorRole role) {
  std::vector<int64_t> out;
  for (const OpTensor& l : t.op_tensors) {
    if (l.op_id == op_id && l.role == role) out.push_back(l.tensor_id);
  }
  return out;
}

TEST(TraceRoundTrip, DataflowEdgesLinkProducerToConsumer) {
  std::string path = WriteSampleTrace("run.mtrace", 5);
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  for (size_t i = 0; i + 2 < trace->ops.size(); i += 2) {
    int64_t linear = trace->ops[i].id, addmm = trace->ops[i + 1].id, next_linear = trace->ops[i + 2].id;
    auto addmm_out = Tensors(*trace, addmm, TensorRole::kOutput);
    auto linear_out = Tensors(*trace, linear, TensorRole::kOutput);
    auto next_in = Tensors(*trace, next_linear, TensorRole::kInput);
    ASSERT_EQ(addmm_out.size(), 1u);
    // The enclosing op returns the value its nested op produced: one tensor.
    EXPECT_EQ(linear_out, addmm_out);
    EXPECT_EQ(next_in, addmm_out);
    EXPECT_EQ(trace->tensors[addmm_out[0]].producer_op_id, addmm);
  }
  // The first input was never produced by a recorded op: a model input.
  auto first_in = Tensors(*trace, trace->ops[0].id, TensorRole::kInput);
  ASSERT_EQ(first_in.size(), 1u);
  EXPECT_EQ(trace->tensors[first_in[0]].producer_op_id, kNoId);
  EXPECT_EQ(trace->tensors[first_in[0]].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(trace->tensors[first_in[0]].strides, (std::vector<int64_t>{8, 1}));
}

TEST(TraceRoundTrip, FinishedRunIsOneFile) {
  std::string path = WriteSampleTrace("run.mtrace", 3);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

TEST(TraceRoundTrip, InterningReturnsStableIds) {
  std::string path = TempPath("intern.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  int64_t a = rec->InternString("aten::mm");
  int64_t b = rec->InternString("aten::add");
  EXPECT_NE(a, b);
  EXPECT_EQ(rec->InternString("aten::mm"), a);
  int64_t f1 = rec->InternFrame(a, 3, b);
  EXPECT_EQ(rec->InternFrame(a, 3, b), f1);
  EXPECT_NE(rec->InternFrame(a, 4, b), f1);
  int64_t p1 = rec->InternCallPath(kNoId, f1);
  EXPECT_EQ(rec->InternCallPath(kNoId, f1), p1);
  EXPECT_NE(rec->InternCallPath(p1, f1), p1);
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->strings.size(), 2u);
  EXPECT_EQ(trace->frames.size(), 2u);
  EXPECT_EQ(trace->call_paths.size(), 2u);
}

// How a scope's module was constructed (Scope::init_*) comes back; the
// first construction at a scope is kept, and a scope without one reads as none.
TEST(TraceRoundTrip, ScopeOriginsComeBack) {
  std::string path = TempPath("scope_origins.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  const int64_t made = rec->InternCallPath(kNoId, rec->InternFrame(rec->InternString("train.py"), 17,
                                                                     rec->InternString("main")));
  const int64_t ddp =
      rec->InternScope(kNoId, "DistributedDataParallel", "DistributedDataParallel", made,
                       R"({"find_unused_parameters":true})");
  EXPECT_EQ(rec->InternScope(kNoId, "DistributedDataParallel", "DistributedDataParallel", kNoId, "{}"), ddp);
  const int64_t plain = rec->InternScope(ddp, "module", "Sequential");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->scopes.size(), 2u);
  EXPECT_EQ(trace->scopes[ddp].init_call_path_id, made);
  EXPECT_EQ(trace->scopes[ddp].init_args, R"({"find_unused_parameters":true})");
  EXPECT_EQ(trace->CallPathFrames(trace->scopes[ddp].init_call_path_id).back(), "train.py:17:main");
  EXPECT_EQ(trace->scopes[plain].init_call_path_id, kNoId);
  EXPECT_EQ(trace->scopes[plain].init_args, "");
}

TEST(TraceRoundTrip, SigkillKeepsEveryCommittedBatch) {
  std::string path = TempPath("killed.mtrace");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    RecorderOptions opts;
    opts.writer.flush_interval_ms = 5;
    if (!Recorder::Start(path, RunMetadata{}, opts).ok()) _exit(3);
    Recorder* rec = Recorder::Active();
    int64_t name = rec->InternString("aten::relu");
    for (int i = 0; i < 300; ++i) {
      rec->BeginOp(name, kNoId);
      rec->EndOp("");
    }
    if (!rec->Flush().ok()) _exit(4);
    // More ops, then die without any chance to clean up; an unfinished op
    // stays open on the stack.
    for (int i = 0; i < 1000; ++i) {
      rec->BeginOp(name, kNoId);
      rec->EndOp("");
    }
    rec->BeginOp(name, kNoId);
    raise(SIGKILL);
    _exit(5);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_GE(trace->ops.size(), 300u);
  EXPECT_LE(trace->ops.size(), 1300u);
  EXPECT_EQ(trace->str(trace->ops[0].name_id), "aten::relu");
}

TEST(TraceRoundTrip, StartingTwiceIsRefused) {
  std::string path = TempPath("a.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Status second = Recorder::Start(TempPath("b.mtrace"), RunMetadata{});
  EXPECT_EQ(second.code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Recorder::Stop().ok());
  EXPECT_EQ(Recorder::Stop().code(), StatusCode::kFailedPrecondition);
}

TEST(TraceRoundTrip, UnwritableLocationIsAClearError) {
  auto st = Recorder::Start("/nonexistent-dir/x/run.mtrace", RunMetadata{});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent-dir/x/run.mtrace"), std::string::npos) << st.message();
}


// The writer's memory is bounded, not by the run's length: with a commit
// interval far longer than the test, a program that appends many times the
// bound still sees its records committed as it goes (early commits and,
// past the bound, back-pressure), and every record reaches the file.
TEST(TraceRoundTrip, PendingRecordsAreBoundedAndCommittedAsTheyGo) {
  std::string path = TempPath("bounded.mtrace");
  TraceWriterOptions options;
  options.flush_interval_ms = 60'000;
  options.max_pending_bytes = 64 << 10;
  auto writer = TraceWriter::Create(path, RunMetadata{}, options);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  (*writer)->AppendString(0, "aten::relu");
  constexpr int kOps = 20'000;  // ~4 MB of records: 60 times the bound
  for (int i = 0; i < kOps; ++i) {
    OpEvent op;
    op.id = i;
    op.name_id = 0;
    op.args = "[\"" + std::string(64, 'x') + "\"]";
    (*writer)->AppendOp(std::move(op), {});
  }
  // Each batch the writer takes holds at most the bound (plus one record):
  // it must have taken and committed dozens of them already.
  EXPECT_GE((*writer)->committed_batches(), 20);
  ASSERT_TRUE((*writer)->Close().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->ops.size(), static_cast<size_t>(kOps));
  EXPECT_EQ(trace->meta.extra.count("trace.backpressure_waits"), 1u);
  EXPECT_EQ(trace->meta.extra.count("trace.backpressure_wait_ms"), 1u);
}


// Every field the writer API is given comes back from the compact rows
// (schema version 3) as it was given, and the same file rewritten as
// version 2 stored it reads back the same. Ops are appended as they end
// (children first), on several threads, with repeated and one-off arguments;
// tensors in several layouts. A tiny dictionary cache makes the writer forget
// and re-add dictionary entries, which must not change what is read.
Trace WriteEveryKindOfRecord(const std::string& path, size_t dictionary_cache_bytes) {
  Trace want;
  want.meta.label = "compact";
  want.meta.command_line = "python compact.py";
  want.meta.start_monotonic_ns = 1'000'000'000'000;
  want.meta.engine = "pytorch";
  TraceWriterOptions options;
  options.dictionary_cache_bytes = dictionary_cache_bytes;
  options.max_pending_bytes = 16 << 10;  // several batches
  auto writer = TraceWriter::Create(path, want.meta, options);
  EXPECT_TRUE(writer.ok()) << writer.status().message();
  TraceWriter& w = **writer;
  want.strings = {"aten::linear", "aten::addmm", "model.py", "forward", "Net", "fc"};
  for (size_t i = 0; i < want.strings.size(); ++i) w.AppendString(static_cast<int64_t>(i), want.strings[i]);
  want.frames = {{0, 2, 10, 3}};
  w.AppendFrame(want.frames[0]);
  want.call_paths = {{0, 0, kNoId}};
  w.AppendCallPath(want.call_paths[0]);
  want.scopes = {{0, 4, 4, kNoId}};
  w.AppendScope(want.scopes[0]);
  const std::vector<std::vector<int64_t>> shapes = {{4, 8}, {}, {3, 0, 2}, {1 << 20, 7}};
  const std::vector<std::vector<int64_t>> strides = {{8, 1}, {}, {0, 2, -1}, {7, 1}};
  for (int64_t i = 0; i < 40; ++i) {
    TensorMeta t;
    t.id = i;
    t.storage_addr = 0x7f0000000000ull + static_cast<uint64_t>(i) * 4096;
    t.storage_offset = i % 3;
    t.shape = shapes[i % 4];
    t.strides = strides[i % 4];
    t.dtype = i % 5 == 0 ? "bfloat16" : "float32";
    t.device = i % 7 == 0 ? "cuda:0" : "cpu";
    t.version = i % 2;
    t.producer_op_id = i % 3 == 0 ? kNoId : 2 * i + 1;
    want.tensors.push_back(t);
    if (i % 2) {
      // The recorder's form: shape and strides apart, the header's own dropped.
      TensorMeta header = t;
      header.shape = {99};
      header.strides = {};
      w.AppendTensor(header, t.shape, t.strides);
    } else {
      w.AppendTensor(t);
    }
  }
  int64_t start_ns = 1'000'000'000'000;
  for (int64_t i = 0; i < 40; ++i) {
    OpEvent parent, child;
    parent.id = 2 * i;
    child.id = 2 * i + 1;
    parent.name_id = 0;
    child.name_id = 1;
    parent.thread_id = child.thread_id = 4000 + i % 3;
    parent.start_ns = start_ns;
    child.start_ns = start_ns + 10;
    child.end_ns = start_ns + 10 + i;  // a zero duration too
    parent.end_ns = child.end_ns + 5;
    start_ns = parent.end_ns + 1'000'000'007;
    child.parent_id = parent.id;
    parent.scope_id = child.scope_id = i % 2 ? 0 : kNoId;
    parent.call_path_id = child.call_path_id = i % 3 ? 0 : kNoId;
    child.correlation_id = static_cast<uint64_t>(i) * 1000;
    parent.args = R"([{"t":0},[4,8]])";
    child.args = i % 4 ? R"([{"t":0},null,1,1.5])" : "[" + std::to_string(i) + "]";
    child.state_id = kNoId;
    std::vector<OpTensor> child_links = {{child.id, TensorRole::kInput, 0, i},
                                         {child.id, TensorRole::kInput, 2, (i + 1) % 40},
                                         {child.id, TensorRole::kOutput, 0, (i + 2) % 40}};
    std::vector<OpTensor> parent_links = {{parent.id, TensorRole::kInput, 0, i},
                                          {parent.id, TensorRole::kOutput, 0, (i + 2) % 40}};
    w.AppendOp(child, child_links);  // ends first
    w.AppendOp(parent, parent_links);
    want.ops.push_back(parent);
    want.ops.push_back(child);
    want.op_tensors.insert(want.op_tensors.end(), parent_links.begin(), parent_links.end());
    want.op_tensors.insert(want.op_tensors.end(), child_links.begin(), child_links.end());
  }
  EXPECT_TRUE(w.Close().ok());
  return want;
}

void ExpectSameRecords(const Trace& got, const Trace& want) {
  EXPECT_EQ(got.meta.label, want.meta.label);
  EXPECT_EQ(got.meta.command_line, want.meta.command_line);
  EXPECT_EQ(got.meta.start_monotonic_ns, want.meta.start_monotonic_ns);
  EXPECT_EQ(got.strings, want.strings);
  ASSERT_EQ(got.ops.size(), want.ops.size());
  for (size_t i = 0; i < want.ops.size(); ++i) {
    const OpEvent& a = got.ops[i];
    const OpEvent& b = want.ops[i];
    SCOPED_TRACE("op " + std::to_string(b.id));
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.name_id, b.name_id);
    EXPECT_EQ(a.thread_id, b.thread_id);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.parent_id, b.parent_id);
    EXPECT_EQ(a.scope_id, b.scope_id);
    EXPECT_EQ(a.call_path_id, b.call_path_id);
    EXPECT_EQ(a.correlation_id, b.correlation_id);
    EXPECT_EQ(a.args, b.args);
    EXPECT_EQ(a.state_id, b.state_id);
  }
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (size_t i = 0; i < want.tensors.size(); ++i) {
    const TensorMeta& a = got.tensors[i];
    const TensorMeta& b = want.tensors[i];
    SCOPED_TRACE("tensor " + std::to_string(b.id));
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.storage_addr, b.storage_addr);
    EXPECT_EQ(a.storage_offset, b.storage_offset);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.strides, b.strides);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.producer_op_id, b.producer_op_id);
  }
  ASSERT_EQ(got.op_tensors.size(), want.op_tensors.size());
  for (size_t i = 0; i < want.op_tensors.size(); ++i) {
    EXPECT_EQ(got.op_tensors[i].op_id, want.op_tensors[i].op_id) << i;
    EXPECT_EQ(got.op_tensors[i].role, want.op_tensors[i].role) << i;
    EXPECT_EQ(got.op_tensors[i].slot, want.op_tensors[i].slot) << i;
    EXPECT_EQ(got.op_tensors[i].tensor_id, want.op_tensors[i].tensor_id) << i;
  }
}

TEST(TraceRoundTrip, CompactRowsReadBackExactlyAndAsVersionTwo) {
  for (size_t cache_bytes : {size_t{8} << 20, size_t{40}}) {
    SCOPED_TRACE("dictionary cache " + std::to_string(cache_bytes));
    const std::string path = TempPath("compact" + std::to_string(cache_bytes) + ".mtrace");
    const Trace want = WriteEveryKindOfRecord(path, cache_bytes);
    auto v3 = ReadTrace(path);
    ASSERT_TRUE(v3.ok()) << v3.status().message();
    EXPECT_EQ(v3->meta.extra.count("schema_version"), 0u);
    ExpectSameRecords(*v3, want);
    testing::DowngradeToSchemaV2(path);
    auto v2 = ReadTrace(path);
    ASSERT_TRUE(v2.ok()) << v2.status().message();
    ExpectSameRecords(*v2, want);
  }
}

// The dictionaries hold each value once while the cache remembers it; past
// the cache's bound a value gets a second row, never a wrong one.
TEST(TraceRoundTrip, DictionariesStoreRepeatedTextOnce) {
  for (size_t cache_bytes : {size_t{8} << 20, size_t{40}}) {
    const std::string path = TempPath("dict" + std::to_string(cache_bytes) + ".mtrace");
    WriteEveryKindOfRecord(path, cache_bytes);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    auto count = [&](const char* sql) {
      sqlite3_stmt* s = nullptr;
      EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
      EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
      const int64_t n = sqlite3_column_int64(s, 0);
      sqlite3_finalize(s);
      return n;
    };
    // 2 repeated argument texts + 10 one-off ones, 3 threads, 4 shapes x 2 dtypes x 2 devices (at most).
    if (cache_bytes > 1000) {
      EXPECT_EQ(count("SELECT count(*) FROM op_args"), 12);
      EXPECT_EQ(count("SELECT count(*) FROM threads"), 3);
      EXPECT_LE(count("SELECT count(*) FROM layouts"), 16);
    } else {
      EXPECT_GT(count("SELECT count(*) FROM op_args"), 12);
    }
    // The views give every row, as version 2 stored it.
    EXPECT_EQ(count("SELECT count(*) FROM ops WHERE args IS NOT NULL AND thread_id >= 4000"), 80);
    EXPECT_EQ(count("SELECT count(*) FROM ops WHERE parent_id = id - 1"), 40);
    EXPECT_EQ(count("SELECT count(*) FROM tensors WHERE shape IS NOT NULL"), 40);
    EXPECT_EQ(count("SELECT count(*) FROM op_tensors"), 200);
    sqlite3_close(db);
  }
}

// What a file stores once comes back once: the tensors of one layout share
// their sizes and strides, the ops of one arguments text share it, and a
// tensor or op given its own value afterwards leaves the others as they were.
TEST(TraceRoundTrip, RowsOfOneLayoutOrArgumentsTextShareItInMemory) {
  const std::string path = TempPath("shared.mtrace");
  const Trace want = WriteEveryKindOfRecord(path, size_t{8} << 20);
  auto got = ReadTrace(path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ExpectSameRecords(*got, want);
  // Tensors 8 and 16 have one layout row (shape {4, 8}, float32 on cpu).
  Trace& t = *got;
  ASSERT_GE(t.tensors.size(), 17u);
  EXPECT_EQ(t.tensors[8].shape.data(), t.tensors[16].shape.data());
  EXPECT_EQ(t.tensors[8].strides.data(), t.tensors[16].strides.data());
  // Tensor 10 has another layout ({3, 0, 2}): its own vectors.
  EXPECT_NE(t.tensors[8].shape.data(), t.tensors[10].shape.data());
  // Parents all carry one text (ops 0, 2, ...).
  EXPECT_EQ(t.ops[0].args.c_str(), t.ops[2].args.c_str());
  t.ops[0].args = std::string("[1]");
  t.tensors[8].shape = {5, 5};
  EXPECT_EQ(t.ops[2].args, R"([{"t":0},[4,8]])");
  EXPECT_EQ(t.ops[0].args, "[1]");
  EXPECT_EQ(t.tensors[16].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(t.tensors[8].shape, (std::vector<int64_t>{5, 5}));
}

}  // namespace
}  // namespace magneton
