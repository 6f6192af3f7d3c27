// The recorder's lifecycle: Start and Stop of the one active session, and the
// reference slots that let Stop wait for every hook still inside it. The
// per-op work is in the parts (recorder_parts.h); this file owns only what
// decides when a session exists and when it may be freed.
#include "magneton/recorder.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <memory>
#include <mutex>
#include <string>

#include "record/recorder_meta.h"
#include "record/recorder_parts.h"

namespace magneton {

std::atomic<Recorder*> Recorder::active_{nullptr};

namespace {

std::mutex g_lifecycle_mu;
std::atomic<uint64_t> g_generation{0};

// A child the process forks is a process of its own with none of the
// session's threads (the writer, the fingerprint thread, the samplers), and
// any of the recorder's locks may have been held by one of them at the fork.
// Were the session still active there, the child's hooks would queue work
// for threads that are not there (a flush or Stop waits for them forever: a
// DataLoader worker, or an os.fork() child whose atexit stops the recording)
// and its Stop would write into the parent's trace file. So the child has no
// session; the parent counts its forks, so that the trace says its
// children's ops are not in it (meta recorder.forked_children).
std::atomic<int64_t> g_forks{0};
int64_t g_forks_at_start = 0;  // g_lifecycle_mu

void CountForkInParent() {
  if (Recorder::IsRecording()) g_forks.fetch_add(1, std::memory_order_relaxed);
}

// The stop protocol (hazard-pointer style, one slot per thread). A Ref bumps
// its thread's slot with a seq_cst read-modify-write, then reads active_;
// Stop clears active_ (seq_cst), then waits until every slot reads 0. In the
// single order of seq_cst operations either the Ref's bump comes first, and
// Stop sees it and waits, or Stop's clear comes first, and the Ref reads null
// (or a later session). The slot is written only by its thread, so the hot
// path touches no cache line that another core writes; Stop alone reads them
// all. A shared counter would do the same with every thread's every op
// bouncing one line between cores.
std::atomic<RecorderRefSlot*> g_slots{nullptr};

// 0: no slot yet, 1: owns t_slot, 2: exited (t_slot released; a Ref taken
// in a later thread-exit destructor claims one that is never released).
thread_local int t_slot_state = 0;
thread_local RecorderRefSlot* t_slot = nullptr;

RecorderRefSlot* ClaimSlot() {
  for (RecorderRefSlot* s = g_slots.load(std::memory_order_acquire); s; s = s->next) {
    bool expected = false;
    if (!s->in_use.load(std::memory_order_relaxed) && s->in_use.compare_exchange_strong(expected, true)) return s;
  }
  // Slots are never freed, so Stop can walk the list without a lock while
  // threads come and go; their number is the most threads ever alive at once.
  auto* s = new RecorderRefSlot();
  s->in_use.store(true, std::memory_order_relaxed);
  RecorderRefSlot* head = g_slots.load(std::memory_order_relaxed);
  do {
    s->next = head;
  } while (!g_slots.compare_exchange_weak(head, s, std::memory_order_seq_cst, std::memory_order_relaxed));
  return s;
}

struct SlotRelease {
  ~SlotRelease() {
    t_slot_state = 2;
    if (t_slot) t_slot->in_use.store(false, std::memory_order_release);  // depth is 0: no Ref outlives the thread
    t_slot = nullptr;
  }
};

RecorderRefSlot* RegisterThread() {
  if (t_slot_state == 0) {
    thread_local SlotRelease release;  // constructed once; its destructor runs at thread exit
    (void)release;
    t_slot_state = 1;
  }
  t_slot = ClaimSlot();
  return t_slot;
}

// Waits until no thread is inside a Ref taken before active_ was cleared.
void WaitForRefs() {
  for (RecorderRefSlot* s = g_slots.load(std::memory_order_seq_cst); s; s = s->next) {
    // A Ref lasts one hook callback (microseconds; an ORT profile ingest,
    // seconds), so spin briefly, then sleep. Only Refs that read this
    // recorder count: the lifecycle lock keeps a new Start out until the wait
    // is over, so every Ref taken since active_ was cleared reads null and
    // unmarks itself inside Enter.
    for (int spins = 0; s->depth.load(std::memory_order_seq_cst) != 0; ++spins) {
      if (spins < 64) {
        sched_yield();
      } else {
        timespec pause{0, 50'000};
        nanosleep(&pause, nullptr);
      }
    }
  }
}

}  // namespace

Recorder::Recorder(std::unique_ptr<TraceWriter> writer, uint64_t generation, bool record_values)
    : writer_(std::move(writer)),
      generation_(generation),
      record_values_(record_values),
      parts_(std::make_unique<record::RecorderParts>(this, writer_.get(), generation, record_values, &next_op_id_,
                                                     &window_open_, &storage_sweep_due_)) {}

Recorder::~Recorder() = default;

Status Recorder::Start(const std::string& path, const RunMetadata& meta, RecorderOptions options) {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (active_.load()) return FailedPrecondition("a recording is already active; stop it before starting another");
  const RunMetadata m = record::CompleteRunMetadata(meta);
  MAGNETON_ASSIGN_OR_RETURN(auto writer, TraceWriter::Create(path, m, options.writer));
  auto* rec = new Recorder(std::move(writer), g_generation.fetch_add(1) + 1, options.record_values);
  if (options.record_values) {
    rec->writer_->SetMeta("values", "fingerprints");
    const int64_t span_name_id = rec->InternString(kFingerprintOpName);
    rec->parts_->ops.set_span_name_id(span_name_id);
    rec->parts_->fingerprints.set_span_name_id(span_name_id);
  }
  record::StartBesideRecording(*rec->parts_, *rec->writer_, options.sample_energy);
  static std::once_flag fork_handlers;
  std::call_once(fork_handlers, [] { pthread_atfork(nullptr, &CountForkInParent, &Recorder::ForgetInForkedChild); });
  g_forks_at_start = g_forks.load(std::memory_order_relaxed);
  active_.store(rec, std::memory_order_release);
  return Status::Ok();
}

// Only what is async-signal-safe runs in a forked child before it goes on:
// an atomic store. The session's memory is the parent's copy; it is left as
// it is (its locks may be held by threads that do not exist here).
void Recorder::ForgetInForkedChild() { active_.store(nullptr, std::memory_order_relaxed); }

Recorder* Recorder::Enter(RecorderRefSlot** slot) {
  RecorderRefSlot* s = t_slot;
  if (!s) [[unlikely]] s = RegisterThread();
  *slot = s;
  s->depth.fetch_add(1, std::memory_order_seq_cst);
  Recorder* rec = active_.load(std::memory_order_seq_cst);
  // Nothing to hold: unmark now, so that a thread lingering in a hook that
  // found no recording (or many such hooks in a row) cannot keep Stop waiting.
  if (!rec) s->depth.store(s->depth.load(std::memory_order_relaxed) - 1, std::memory_order_release);
  return rec;
}

Status Recorder::Stop() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (t_slot && t_slot->depth.load(std::memory_order_relaxed) != 0) {
    return FailedPrecondition("Recorder::Stop called from inside a recording callback (a Recorder::Ref is alive on "
                              "this thread); stop from outside the hook");
  }
  Recorder* rec = active_.exchange(nullptr, std::memory_order_seq_cst);
  if (!rec) return FailedPrecondition("no recording is active");
  // Removing an engine's callback (torch's removeCallback) does not wait for
  // callbacks already running: they may still be using rec inside a Ref.
  WaitForRefs();
  rec->writer_->SetMeta("recorder.forked_children",
                        std::to_string(g_forks.load(std::memory_order_relaxed) - g_forks_at_start));
  Status st = record::WriteStopMeta(*rec->parts_, *rec->writer_, rec->record_values_);
  Status closed = rec->writer_->Close();
  if (st.ok()) st = closed;
  delete rec;
  return st;
}

}  // namespace magneton
