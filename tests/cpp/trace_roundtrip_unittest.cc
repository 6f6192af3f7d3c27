#include <gtest/gtest.h>
#include <signal.h>
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

}  // namespace
}  // namespace magneton
