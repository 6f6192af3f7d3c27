// Per-thread op stacks alone (src/record/op_stacks.h): nesting and what a
// nested op inherits, one stack per thread and per session, detached and
// held ops, and the recorder spans written beside an op.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "record/op_stacks.h"
#include "test_util.h"

namespace magneton::record {
namespace {

using testing::NewTestTrace;
using testing::TestTrace;

// Each OpStacks here is a session of its own: a generation no other test
// (and no Recorder, whose generations count from 1) uses.
uint64_t NewGeneration() {
  static std::atomic<uint64_t> next{1'000'000};
  return next.fetch_add(1);
}

const OpEvent* FindOp(const Trace& trace, int64_t id) {
  for (const OpEvent& op : trace.ops)
    if (op.id == id) return &op;
  return nullptr;
}

TEST(OpStacks, ANestedOpInheritsItsParentsCallPathAndScope) {
  TestTrace t = NewTestTrace("nesting.mtrace");
  // The rows the ops name: two call paths, two scopes.
  t.writer->AppendString(0, "op");
  t.writer->AppendFrame({0, 0, 1, 0});
  t.writer->AppendCallPath({0, 0, kNoId});
  t.writer->AppendCallPath({1, 0, 0});
  t.writer->AppendScope({0, 0, 0, kNoId, kNoId, ""});
  t.writer->AppendScope({1, 0, 0, 0, kNoId, ""});
  std::atomic<int64_t> next_id{0};
  OpStacks ops(t.writer.get(), NewGeneration(), &next_id);
  constexpr int64_t kPath = 0, kScope = 0, kOtherPath = 1, kOtherScope = 1;
  const int64_t outer = ops.Begin(0, kPath, kScope, /*correlation_id=*/0);
  const int64_t nested = ops.Begin(0, kNoId, kNoId, 0);
  EXPECT_EQ(ops.Innermost()->event.parent_id, outer);
  EXPECT_EQ(ops.Innermost()->event.call_path_id, kPath);
  EXPECT_EQ(ops.Innermost()->event.scope_id, kScope);
  const int64_t own = ops.Begin(0, kOtherPath, kOtherScope, 0);  // its own path and scope win
  EXPECT_EQ(ops.Innermost()->event.parent_id, nested);
  EXPECT_EQ(ops.Innermost()->event.call_path_id, kOtherPath);
  EXPECT_EQ(ops.Innermost()->event.scope_id, kOtherScope);
  EXPECT_EQ(ops.Depth(), 3u);
  ops.End("", 0, MonotonicNowNs());
  ops.End("", 0, MonotonicNowNs());
  ops.End("", 0, MonotonicNowNs());
  EXPECT_EQ(ops.Depth(), 0u);
  EXPECT_EQ(ops.Innermost(), nullptr);
  EXPECT_EQ(next_id.load(), 3);
  // A top-level op inherits nothing: no call path, and no scope unless the
  // thread pushed one.
  const int64_t top = ops.Begin(0, kNoId, kNoId, 0);
  EXPECT_EQ(ops.Innermost()->event.parent_id, kNoId);
  EXPECT_EQ(ops.Innermost()->event.call_path_id, kNoId);
  EXPECT_EQ(ops.Innermost()->event.scope_id, kNoId);
  ops.End("", 0, MonotonicNowNs());
  ops.PushScope(kScope);
  ops.PushScope(kOtherScope);
  EXPECT_EQ(ops.PushedScope(), kOtherScope);
  ops.PopScope();
  const int64_t scoped = ops.Begin(0, kNoId, kNoId, 0);
  EXPECT_EQ(ops.Innermost()->event.scope_id, kScope);
  ops.End("{\"k\":1}", 0, MonotonicNowNs());
  ops.PopScope();
  ops.PopScope();  // popping an empty stack is harmless
  EXPECT_EQ(ops.PushedScope(), kNoId);

  const Trace trace = t.Close();
  ASSERT_EQ(trace.ops.size(), 5u);
  EXPECT_EQ(FindOp(trace, own)->parent_id, nested);
  EXPECT_EQ(FindOp(trace, nested)->parent_id, outer);
  EXPECT_EQ(FindOp(trace, outer)->parent_id, kNoId);
  EXPECT_EQ(FindOp(trace, top)->parent_id, kNoId);
  EXPECT_EQ(FindOp(trace, scoped)->args, "{\"k\":1}");
  EXPECT_LE(FindOp(trace, outer)->start_ns, FindOp(trace, nested)->start_ns);
  EXPECT_GE(FindOp(trace, outer)->end_ns, FindOp(trace, nested)->end_ns);
}

TEST(OpStacks, WithNoOpenOpNothingIsEndedDetachedOrHeld) {
  TestTrace t = NewTestTrace("empty.mtrace");
  std::atomic<int64_t> next_id{0};
  OpStacks ops(t.writer.get(), NewGeneration(), &next_id);
  ops.End("", 0, MonotonicNowNs());
  EXPECT_EQ(ops.Detach(0, 0), kNoId);
  ops.Hold("{}", "jax::jit(f)", "jit_f");
  EXPECT_TRUE(ops.TakeHeld().empty());
  EXPECT_FALSE(ops.Reattach(0));  // nothing was detached
  EXPECT_EQ(ops.Depth(), 0u);
  EXPECT_EQ(next_id.load(), 0);
  EXPECT_TRUE(t.Close().ops.empty());
}

// A thread's stack, scopes and state belong to one session: the next
// session (a new generation) finds the thread empty, whatever the last one left.
TEST(OpStacks, ANewSessionFindsEveryThreadEmpty) {
  TestTrace t = NewTestTrace("sessions.mtrace");
  std::atomic<int64_t> next_id{0};
  OpStacks first(t.writer.get(), NewGeneration(), &next_id);
  first.Begin(0, kNoId, kNoId, 0);  // left open, as by a session stopped mid-op
  first.PushScope(5);
  first.Local().state_id = 2;
  EXPECT_EQ(first.Depth(), 1u);
  OpStacks second(t.writer.get(), NewGeneration(), &next_id);
  EXPECT_EQ(second.Depth(), 0u);
  EXPECT_EQ(second.PushedScope(), kNoId);
  EXPECT_EQ(second.Local().state_id, kNoId);
  EXPECT_NE(second.Local().os_tid, 0);
  second.Begin(0, kNoId, kNoId, 0);
  EXPECT_EQ(second.Innermost()->event.parent_id, kNoId);  // not nested in the first session's op
  second.End("", 0, MonotonicNowNs());
}

TEST(OpStacks, EachThreadHasItsOwnStack) {
  TestTrace t = NewTestTrace("threads.mtrace");
  std::atomic<int64_t> next_id{0};
  OpStacks ops(t.writer.get(), NewGeneration(), &next_id);
  ops.Local().state_id = 9;
  const int64_t main_op = ops.Begin(0, 1, 1, 0);
  int64_t other_parent = 0, other_state = 0;
  size_t other_depth = 1;
  std::thread([&] {
    other_depth = ops.Depth();
    ops.Begin(0, kNoId, kNoId, 0);
    other_parent = ops.Innermost()->event.parent_id;
    other_state = ops.Innermost()->event.state_id;
    ops.End("", 0, MonotonicNowNs());
  }).join();
  EXPECT_EQ(other_depth, 0u);
  EXPECT_EQ(other_parent, kNoId);  // not the main thread's op
  EXPECT_EQ(other_state, kNoId);   // the state id is per thread too
  ASSERT_EQ(ops.Depth(), 1u);
  EXPECT_EQ(ops.Innermost()->event.id, main_op);
  EXPECT_EQ(ops.Innermost()->event.state_id, 9);
  ops.End("", 0, MonotonicNowNs());
}

// A hook can record from a destructor that runs at thread exit after the
// thread's own state was freed (another thread_local's): it gets a state of
// its own rather than the freed one (using the freed one shows as invalid
// writes under the ASan build or valgrind, not in a plain run).
struct RecordsAtThreadExit {
  OpStacks* ops = nullptr;
  size_t* depth = nullptr;
  ~RecordsAtThreadExit() {
    if (!ops) return;
    ops->Begin(0, kNoId, kNoId, 0);
    *depth = ops->Depth();
    ops->End("", 0, MonotonicNowNs());
  }
};

TEST(OpStacks, AnOpFromALateThreadExitDestructorIsRecorded) {
  TestTrace t = NewTestTrace("thread_exit.mtrace");
  t.writer->AppendString(0, "op");
  std::atomic<int64_t> next_id{0};
  OpStacks ops(t.writer.get(), NewGeneration(), &next_id);
  size_t depth_at_exit = 0;
  std::thread([&] {
    // Made before the thread's op state, so destroyed after it.
    thread_local RecordsAtThreadExit at_exit;
    at_exit.ops = &ops;
    at_exit.depth = &depth_at_exit;
    ops.Begin(0, kNoId, kNoId, 0);
    ops.End("", 0, MonotonicNowNs());
  }).join();
  EXPECT_EQ(depth_at_exit, 1u);
  EXPECT_EQ(t.Close().ops.size(), 2u);
}

// A jitted call's op is detached at dispatch, reattached (on any thread)
// for its outputs once, then held with its detached times until taken.
TEST(OpStacks, ADetachedOpIsReattachedOnceAndHeldUntilTaken) {
  TestTrace t = NewTestTrace("detached.mtrace");
  std::atomic<int64_t> next_id{0};
  OpStacks ops(t.writer.get(), NewGeneration(), &next_id);
  const int64_t call = ops.Begin(0, kNoId, kNoId, 0);
  const int64_t began_ns = ops.Innermost()->event.start_ns;
  ops.Innermost()->links.push_back({call, TensorRole::kInput, 0, 11});
  // start_ns before the begin moves the start earlier; dispatched_ns is kept.
  EXPECT_EQ(ops.Detach(began_ns - 1000, /*dispatched_ns=*/began_ns + 5), call);
  EXPECT_EQ(ops.Depth(), 0u);
  bool reattached = false, again = true;
  std::thread([&] {
    reattached = ops.Reattach(call);
    again = ops.Reattach(call);
    ops.Innermost()->links.push_back({call, TensorRole::kOutput, 0, 12});
    ops.Hold("{}", "jax::jit(f)", "jit_f");
  }).join();
  EXPECT_TRUE(reattached);
  EXPECT_FALSE(again);  // no longer detached: it was on the other thread's stack
  EXPECT_EQ(ops.Depth(), 0u);
  std::vector<Recorder::HeldOp> held = ops.TakeHeld();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].event.id, call);
  EXPECT_EQ(held[0].event.start_ns, began_ns - 1000);
  EXPECT_EQ(held[0].dispatched_ns, began_ns + 5);
  EXPECT_EQ(held[0].name, "jax::jit(f)");
  EXPECT_EQ(held[0].module, "jit_f");
  EXPECT_EQ(held[0].links.size(), 2u);
  EXPECT_TRUE(ops.TakeHeld().empty());  // taken once

  // A start after the begin does not move it later; no dispatch time: the detach's.
  const int64_t second = ops.Begin(0, kNoId, kNoId, 0);
  const int64_t second_began = ops.Innermost()->event.start_ns;
  EXPECT_EQ(ops.Detach(second_began + 1'000'000'000, 0), second);
  ASSERT_TRUE(ops.Reattach(second));
  EXPECT_EQ(ops.Innermost()->event.start_ns, second_began);
  EXPECT_EQ(ops.Innermost()->dispatched_ns, ops.Innermost()->event.end_ns);
  ops.Hold("{}", "g", "jit_g");
  EXPECT_EQ(ops.TakeHeld().size(), 1u);
  EXPECT_TRUE(t.Close().ops.empty());  // held ops are the taker's to write
}

// Time the recorder spent while an op was open becomes recorder ops: inside
// the op when the span lies in its interval, beside it (in its parent) when not.
TEST(OpStacks, RecorderSpansAreWrittenAsRecorderOpsWhereTheyFall) {
  TestTrace t = NewTestTrace("spans.mtrace");
  t.writer->AppendString(0, "op");
  t.writer->AppendString(1, std::string(kFingerprintOpName));
  std::atomic<int64_t> next_id{10};
  OpStacks ops(t.writer.get(), NewGeneration(), &next_id);
  ops.set_span_name_id(1);
  const int64_t parent = ops.Begin(0, kNoId, kNoId, 0);
  const int64_t op = ops.Begin(0, kNoId, kNoId, 0);
  EXPECT_EQ(parent, 10);  // ids come from the session's counter
  ops.Innermost()->recorder_spans.push_back({1'000, 2'000});  // inside [500, 3000]
  ops.Innermost()->recorder_spans.push_back({3'000, 4'000});  // after the op's end
  ops.End("", /*start_ns=*/500, /*end_ns=*/3'000);
  ops.End("", 100, 5'000);
  EXPECT_EQ(next_id.load(), 14);
  const Trace trace = t.Close();
  ASSERT_EQ(trace.ops.size(), 4u);
  int inside = 0, beside = 0;
  for (const OpEvent& e : trace.ops) {
    if (e.name_id != 1) continue;
    if (e.start_ns == 1'000) {
      EXPECT_EQ(e.parent_id, op);
      ++inside;
    } else {
      EXPECT_EQ(e.parent_id, parent);
      ++beside;
    }
  }
  EXPECT_EQ(inside, 1);
  EXPECT_EQ(beside, 1);
  EXPECT_EQ(FindOp(trace, op)->start_ns, 500);
  EXPECT_EQ(FindOp(trace, op)->end_ns, 3'000);
}

}  // namespace
}  // namespace magneton::record
