// Closing, detaching and holding ops (op_stacks.h): the parts of the op
// stacks that write rows or pass an op to another thread.
#include "record/op_stacks.h"

namespace magneton::record {
namespace {

constinit thread_local bool t_thread_exited = false;

// Frees the thread's state when the thread exits.
struct ThreadStateOwner {
  ThreadState state;
  ~ThreadStateOwner() {
    t_thread_exited = true;
    t_thread_state = nullptr;
  }
};

}  // namespace

ThreadState* NewThreadState() {
  if (t_thread_exited) [[unlikely]] {
    // An op from a destructor that runs after this thread's state was freed
    // (another thread_local's): a state of its own, never freed, as the
    // reference slot such a destructor claims (recorder.cc).
    t_thread_state = new ThreadState();
    return t_thread_state;
  }
  thread_local ThreadStateOwner owner;
  t_thread_state = &owner.state;
  return t_thread_state;
}

void OpStacks::End(std::string args, int64_t start_ns, int64_t end_ns) {
  ThreadState& ts = Local();
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  if (start_ns > 0) p.event.start_ns = start_ns;
  p.event.end_ns = end_ns;
  // The recorder's spans nest in the op when they lie inside its interval;
  // an engine that reads the end time before its outputs are fingerprinted
  // (ggml) leaves them after it, beside the op in its parent.
  const int64_t outer_parent = p.event.parent_id;
  for (const RecorderSpan& span : p.recorder_spans) {
    OpEvent r;
    r.id = next_op_id_->fetch_add(1, std::memory_order_relaxed);
    r.name_id = span_name_id_;
    r.thread_id = p.event.thread_id;
    r.parent_id = span.start_ns >= p.event.start_ns && span.end_ns <= p.event.end_ns ? p.event.id : outer_parent;
    r.scope_id = p.event.scope_id;
    r.call_path_id = p.event.call_path_id;
    r.start_ns = span.start_ns;
    r.end_ns = span.end_ns;
    writer_->AppendOp(std::move(r), {});
  }
  writer_->AppendOp(std::move(p.event), p.links, args);
  ts.ops.pop_back();
}

int64_t OpStacks::Detach(int64_t start_ns, int64_t dispatched_ns) {
  ThreadState& ts = Local();
  if (ts.ops.empty()) return kNoId;
  PendingOp& p = ts.ops.back();
  p.event.end_ns = MonotonicNowNs();
  if (start_ns > 0 && start_ns < p.event.start_ns) p.event.start_ns = start_ns;
  p.dispatched_ns = dispatched_ns > 0 ? dispatched_ns : p.event.end_ns;
  const int64_t id = p.event.id;
  {
    std::lock_guard<std::mutex> lock(held_mu_);
    detached_[id] = std::move(p);
  }
  ts.ops.pop_back();
  return id;
}

bool OpStacks::Reattach(int64_t op_id) {
  PendingOp p;
  {
    std::lock_guard<std::mutex> lock(held_mu_);
    auto it = detached_.find(op_id);
    if (it == detached_.end()) return false;
    p = std::move(it->second);
    detached_.erase(it);
  }
  ThreadState& ts = Local();
  ts.ops.emplace_back() = std::move(p);
  return true;
}

void OpStacks::Hold(std::string args, std::string name, std::string module) {
  ThreadState& ts = Local();
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  p.event.args = std::move(args);
  // Fingerprints read after the op's detached end: recorder ops beside it.
  for (const RecorderSpan& span : p.recorder_spans) {
    OpEvent r;
    r.id = next_op_id_->fetch_add(1, std::memory_order_relaxed);
    r.name_id = span_name_id_;
    r.thread_id = ts.os_tid;
    r.parent_id = p.event.parent_id;
    r.scope_id = p.event.scope_id;
    r.call_path_id = p.event.call_path_id;
    r.start_ns = span.start_ns;
    r.end_ns = span.end_ns;
    writer_->AppendOp(std::move(r), {});
  }
  {
    std::lock_guard<std::mutex> lock(held_mu_);
    held_.push_back({std::move(p.event), std::move(p.links), std::move(name), std::move(module), p.dispatched_ns});
  }
  ts.ops.pop_back();
}

std::vector<Recorder::HeldOp> OpStacks::TakeHeld() {
  std::lock_guard<std::mutex> lock(held_mu_);
  std::vector<Recorder::HeldOp> out;
  out.swap(held_);
  return out;
}

}  // namespace magneton::record
