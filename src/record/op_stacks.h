// The per-thread op stacks of one recording: which ops are open on each
// thread (innermost last), what a new op inherits from the op around it (its
// parent, call path and scope), the scopes an engine pushed and the runtime
// state stamped on the thread's ops; and the ops a jitted call detaches from
// its thread and holds until its profile times it.
//
// The stacks are thread-local, so the per-op path takes no lock and touches
// no memory another thread writes; only detached and held ops, which pass
// between threads, have a lock (held_mu_). A thread's state belongs to one
// session at a time: the first use under a new session (generation) resets it.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "magneton/clock.h"
#include "magneton/recorder.h"
#include "magneton/trace.h"
#include "magneton/trace_writer.h"

namespace magneton::record {

// Time the recorder itself spent on a thread while an op was pending
// (computing --values fingerprints): written as a recorder op
// (kFingerprintOpName) when the op ends, so attribution charges it to the
// recorder and not to the op that happened to be running.
struct RecorderSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct PendingOp {
  OpEvent event;
  std::vector<OpTensor> links;
  std::vector<std::pair<uint64_t, int64_t>> input_storages;  // (storage address, tensor id) per input
  std::vector<RecorderSpan> recorder_spans;
  int64_t dispatched_ns = 0;  // Recorder::DetachOp
};

// A thread's open ops, innermost last. Slots are reused from op to op, so a
// PendingOp's vectors keep their capacity: an op allocates nothing here.
class PendingStack {
 public:
  PendingOp& emplace_back() {
    if (depth_ == slots_.size()) slots_.emplace_back();
    PendingOp& p = slots_[depth_++];
    p.event = OpEvent{};
    p.links.clear();
    p.input_storages.clear();
    p.recorder_spans.clear();
    p.dispatched_ns = 0;
    return p;
  }
  void pop_back() { --depth_; }
  void clear() { depth_ = 0; }
  bool empty() const { return depth_ == 0; }
  size_t size() const { return depth_; }
  PendingOp& back() { return slots_[depth_ - 1]; }
  PendingOp& operator[](size_t i) { return slots_[i]; }

 private:
  std::vector<PendingOp> slots_;
  size_t depth_ = 0;
};

struct ThreadState {
  uint64_t generation = 0;
  int64_t os_tid = 0;
  int64_t state_id = kNoId;  // Recorder::SetThreadStateId
  PendingStack ops;
  std::vector<int64_t> scopes;

  void Reset(uint64_t gen) {
    generation = gen;
    state_id = kNoId;
    ops.clear();
    scopes.clear();
    if (os_tid == 0) os_tid = static_cast<int64_t>(syscall(SYS_gettid));
  }
};

// Each thread's state, shared by all sessions (OpStacks::Local resets it per
// session), made on the thread's first op (NewThreadState). A pointer with a
// constant initializer, so that reading it is one TLS access: a thread_local
// ThreadState needs an init-guard call on every access from another file.
// Hidden: only libmagneton.so's recorder reads it (no dynamic symbol lookup).
[[gnu::visibility("hidden")]] inline constinit thread_local ThreadState* t_thread_state = nullptr;
// Makes this thread's state (freed at thread exit) and points t_thread_state at it.
ThreadState* NewThreadState();

class OpStacks {
 public:
  // next_op_id: the session's op id counter (Recorder::ReserveOpId), which
  // ops begun here and the recorder ops written for their spans draw from.
  OpStacks(TraceWriter* writer, uint64_t generation, std::atomic<int64_t>* next_op_id)
      : writer_(writer), generation_(generation), next_op_id_(next_op_id) {}
  OpStacks(const OpStacks&) = delete;
  OpStacks& operator=(const OpStacks&) = delete;

  // The name id of the recorder ops written for an op's RecorderSpans
  // (kFingerprintOpName, interned at Start with --values).
  void set_span_name_id(int64_t name_id) { span_name_id_ = name_id; }

  // This thread's state, reset the first time it is used in this session.
  ThreadState& Local() const {
    ThreadState* ts = t_thread_state;
    if (!ts) [[unlikely]] ts = NewThreadState();
    if (ts->generation != generation_) ts->Reset(generation_);
    return *ts;
  }

  // Opens an op on this thread (Recorder::BeginOp) and returns its id.
  int64_t Begin(int64_t name_id, int64_t call_path_id, int64_t scope_id, uint64_t correlation_id) {
    ThreadState& ts = Local();
    PendingOp& p = ts.ops.emplace_back();
    OpEvent& op = p.event;
    op.id = next_op_id_->fetch_add(1, std::memory_order_relaxed);
    op.name_id = name_id;
    op.thread_id = ts.os_tid;
    const OpEvent* enclosing = ts.ops.size() > 1 ? &ts.ops[ts.ops.size() - 2].event : nullptr;
    op.parent_id = enclosing ? enclosing->id : kNoId;
    // Nested ops inherit the Python call path and scope of the op that issued them.
    if (scope_id == kNoId) scope_id = enclosing ? enclosing->scope_id : (ts.scopes.empty() ? kNoId : ts.scopes.back());
    if (call_path_id == kNoId && enclosing) call_path_id = enclosing->call_path_id;
    op.scope_id = scope_id;
    op.call_path_id = call_path_id;
    op.correlation_id = correlation_id;
    op.state_id = ts.state_id;
    op.start_ns = MonotonicNowNs();
    return op.id;
  }
  // This thread's innermost open op; null when none is open.
  PendingOp* Innermost() const {
    ThreadState& ts = Local();
    return ts.ops.empty() ? nullptr : &ts.ops.back();
  }
  size_t Depth() const { return Local().ops.size(); }

  // Writes this thread's innermost op with this interval (start_ns 0: when
  // it began) and its spans as recorder ops, and closes it. No op: nothing.
  void End(std::string args, int64_t start_ns, int64_t end_ns);
  // Recorder::DetachOp, ReattachOp, HoldOp, TakeHeldOps (recorder.h).
  int64_t Detach(int64_t start_ns, int64_t dispatched_ns);
  bool Reattach(int64_t op_id);
  void Hold(std::string args, std::string name, std::string module);
  std::vector<Recorder::HeldOp> TakeHeld();

  // The innermost scope this thread pushed (kNoId: none); Push/Pop change it.
  int64_t PushedScope() const {
    const ThreadState& ts = Local();
    return ts.scopes.empty() ? kNoId : ts.scopes.back();
  }
  void PushScope(int64_t scope_id) { Local().scopes.push_back(scope_id); }
  void PopScope() {
    ThreadState& ts = Local();
    if (!ts.scopes.empty()) ts.scopes.pop_back();
  }

 private:
  TraceWriter* const writer_;
  const uint64_t generation_;
  std::atomic<int64_t>* const next_op_id_;
  int64_t span_name_id_ = kNoId;
  // DetachOp's ops by id until ReattachOp, and HoldOp's until they are taken.
  std::mutex held_mu_;
  std::unordered_map<int64_t, PendingOp> detached_;
  std::vector<Recorder::HeldOp> held_;
};

}  // namespace magneton::record
