#include "magneton/recorder.h"
#include "record/window.h"

#include "base/clock.h"
#include "fingerprint/fingerprint.h"
#include "fingerprint/value_parts.h"
#include "record/energy_session.h"
#include "record/machine_load.h"
#include "trace/redact.h"
#include "trace/rerun_plan.h"
#include "trust/trace_trust.h"

#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace magneton {

std::atomic<Recorder*> Recorder::active_{nullptr};

namespace {

std::mutex g_lifecycle_mu;
std::atomic<uint64_t> g_generation{0};

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

inline uint64_t Mix(uint64_t h, uint64_t v) {
  // 64-bit FNV-style mixing; collisions only cost a map probe.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

struct TensorKey {
  uint64_t storage_addr;
  uint64_t storage_uid;  // TensorView::storage_uid
  int64_t storage_offset;
  int64_t version;
  uint64_t layout_hash;  // shape, strides, dtype, device
  bool operator==(const TensorKey&) const = default;
};
struct TensorKeyHash {
  size_t operator()(const TensorKey& k) const {
    return Mix(Mix(Mix(Mix(k.storage_addr, k.storage_uid), static_cast<uint64_t>(k.storage_offset)),
                   static_cast<uint64_t>(k.version)),
               k.layout_hash);
  }
};
struct TensorEntry {
  int64_t id;
  int64_t producer_op_id;
  // --values: whether the value has its fingerprint. A buffer from a nested
  // allocation (aten::empty) or a write-only argument is registered before
  // its values exist; the op that hands it back as its output fingerprints it.
  bool fingerprinted = false;
  // The producing op wrote the value into a buffer that existed before it
  // (copy_'s or add_'s self, an out= argument). An op that hands back such a
  // value made by an op nested in it may have written it again since:
  // addmm copies the bias in with a nested copy_, then its BLAS call adds
  // the product, with no recorded op and no version bump. Its values are
  // final only at the enclosing op's end (ResolveTensor).
  bool buffer_write = false;
};

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return Mix(static_cast<uint64_t>(p.first), static_cast<uint64_t>(p.second));
  }
};

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

// A value read through one layout, and its encoded fingerprint: reused for a
// view that reads the same elements in the same order (weight.t() made again
// in every forward; view(1, 1, n) of an op's (1, n) result). Found by the
// value's id, not by address, because freed memory is reused at once by new
// values; dropped when that value is forgotten (ForgetLocked).
struct ViewFingerprint {
  int64_t storage_offset;
  uint64_t layout_hash;  // ValueLayoutHash
  std::shared_ptr<const std::string> encoded;
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

thread_local ThreadState t_state;

inline ThreadState& Local(uint64_t generation) {
  if (t_state.generation != generation) t_state.Reset(generation);
  return t_state;
}

// dtype, device, and each dim's size and stride; skip_size_one leaves out
// the dims of size 1.
uint64_t HashLayout(const TensorView& t, bool skip_size_one) {
  uint64_t h = std::hash<std::string_view>{}(t.dtype);
  h = Mix(h, std::hash<std::string_view>{}(t.device));
  uint64_t kept = 0;
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (skip_size_one && t.sizes[i] == 1) continue;
    h = Mix(h, static_cast<uint64_t>(t.sizes[i]));
    h = Mix(h, t.strides ? static_cast<uint64_t>(t.strides[i]) : 0);
    ++kept;
  }
  return Mix(Mix(h, kept), t.strides ? 1 : 0);
}

// A tensor's identity: every dim counts (a (1, n) view is not its (n) value).
uint64_t LayoutHash(const TensorView& t) { return HashLayout(t, /*skip_size_one=*/false); }

// What a fingerprint reads of a view's layout: the fingerprint stage reads a
// value through its dims of size > 1 only (MakeSampleGrid, the strong part),
// so two views of one value that differ only in size-1 dims (unsqueeze;
// view(1, 1, n) of a (1, n) result) have one fingerprint, bit for bit
// (tests/cpp/fingerprint_invariance_unittest.cc).
uint64_t ValueLayoutHash(const TensorView& t) { return HashLayout(t, /*skip_size_one=*/true); }

TensorKey KeyOf(const TensorView& t) {
  return TensorKey{t.storage_addr, t.storage_uid, t.storage_offset, t.version, LayoutHash(t)};
}

}  // namespace

struct Recorder::State {
  std::mutex mu;
  std::unordered_map<std::string, int64_t> strings;
  std::unordered_map<uint64_t, std::vector<int64_t>> frame_index;  // hash -> candidate frame ids
  std::vector<Frame> frames;
  std::unordered_map<std::pair<int64_t, int64_t>, int64_t, PairHash> call_paths;
  struct ScopeKey {
    int64_t parent, name, type;
    bool operator==(const ScopeKey&) const = default;
  };
  struct ScopeKeyHash {
    size_t operator()(const ScopeKey& k) const {
      return Mix(Mix(static_cast<uint64_t>(k.parent), static_cast<uint64_t>(k.name)), static_cast<uint64_t>(k.type));
    }
  };
  std::unordered_map<ScopeKey, int64_t, ScopeKeyHash> scopes;
  // The values a later op may still read, by key. Memory follows what is
  // live, not what ran: a value is forgotten when its storage is freed
  // (ForgetStorages) or written (a newer version under the storage's shared
  // version counter), so a forgotten key can only come back as a new value.
  // Forgetting never aliases: storage_uid is never reused, so a new buffer
  // at a freed address has keys of its own.
  std::unordered_map<TensorKey, TensorEntry, TensorKeyHash> tensors;
  // The keys in `tensors` per storage (storage_uid != 0).
  std::unordered_map<uint64_t, std::vector<TensorKey>> keys_by_storage;
  int64_t next_tensor_id = 0;
  int64_t tensors_forgotten = 0;
  // Inputs first seen inside a nested op: buffers their parent allocated
  // without a recorded op, not fingerprinted (ResolveTensor).
  int64_t fresh_nested_inputs = 0;
  // Values that hold no values yet (ResolveTensor): their views are not
  // fingerprinted either. Ids leave with their value (ForgetLocked).
  std::unordered_set<int64_t> uninitialized_ids;
  // When `tensors` reaches this size, hooks are asked to look for freed
  // storages (StorageSweepDue): the map then stays within about twice the
  // values on live storages, plus this floor.
  static constexpr size_t kSweepFloor = 16384;
  size_t sweep_at = kSweepFloor;
  std::map<std::map<std::string, std::string>, int64_t> runtime_states;
  // DetachOp's ops by id until ReattachOp, and HoldOp's until they are written.
  std::mutex held_mu;
  std::unordered_map<int64_t, PendingOp> detached;
  std::vector<Recorder::HeldOp> held;
  // --values: encoded fingerprints by (value, offset, layout), for the views
  // of that value: a value's own and those of its views. Views recreated
  // every step (weight.t() in each forward) are fingerprinted once, not once
  // per step, and a view that reads its value's elements in the value's own
  // order (HF's view(1, 1, n) of a Conv1D's addmm result) takes the value's
  // fingerprint. Nothing else is reused: an address with the same layout and
  // version can hold a new value (freed and reallocated memory, writes by
  // nested ops that bump no version counter).
  std::mutex fingerprint_mu;
  std::unordered_map<int64_t, std::vector<ViewFingerprint>> fingerprints;  // by value id
  size_t fingerprint_bytes_cached = 0;
  int64_t fingerprints_reused = 0;

  // Drops the value under `key`, with the fingerprints cached for its views.
  // mu held; its id is never looked up again (ids are 1:1 with keys).
  void ForgetLocked(const TensorKey& key) {
    auto it = tensors.find(key);
    if (it == tensors.end()) return;
    const int64_t id = it->second.id;
    tensors.erase(it);
    uninitialized_ids.erase(id);
    ++tensors_forgotten;
    std::lock_guard<std::mutex> lock(fingerprint_mu);
    DropCachedLocked(id);
  }

  // The fingerprint kept for value `id` read at this offset and layout, or
  // null; fingerprint_mu held.
  ViewFingerprint* FindCachedLocked(int64_t id, int64_t storage_offset, uint64_t layout_hash) {
    auto it = fingerprints.find(id);
    if (it == fingerprints.end()) return nullptr;
    for (ViewFingerprint& v : it->second) {
      if (v.storage_offset == storage_offset && v.layout_hash == layout_hash) return &v;
    }
    return nullptr;
  }

  // Drops the fingerprints kept for views of value `id`; fingerprint_mu held.
  void DropCachedLocked(int64_t id) {
    if (auto f = fingerprints.find(id); f != fingerprints.end()) {
      for (const ViewFingerprint& v : f->second) fingerprint_bytes_cached -= v.encoded->size();
      fingerprints.erase(f);
    }
  }
};

Recorder::Recorder(std::unique_ptr<TraceWriter> writer, uint64_t generation, bool record_values)
    : writer_(std::move(writer)),
      state_(std::make_unique<State>()),
      generation_(generation),
      record_values_(record_values) {}

struct MachineLoadStart {
  std::unique_ptr<record::LoadSampler> sampler;
};

Recorder::~Recorder() = default;

// What else ran on the machine while this recording did; a failure is said
// in the trace, not hidden (docs/TRACE_FORMAT.md, machine.*).
void Recorder::WriteMachineLoadMeta() {
  if (!load_start_) return;  // Start wrote machine.load_error
  const LoadSeries series = load_start_->sampler->Stop();
  load_start_.reset();
  const record::CpuTicks first{series.samples.front().busy, series.samples.front().steal, series.samples.front().total};
  const record::CpuTicks last{series.samples.back().busy, series.samples.back().steal, series.samples.back().total};
  auto load = record::LoadBetween(first, last, series.samples.back().own_cpu_ns - series.samples.front().own_cpu_ns,
                                  series.ticks_per_second);
  if (!load.ok()) {
    writer_->SetMeta("machine.load_error", load.status().message());
    return;
  }
  load->cpus = record::UsableCpuCount();
  for (const auto& [key, value] : record::LoadMeta(*load)) writer_->SetMeta(key, value);
  // The series, so that the diff can take the load over the job alone.
  writer_->SetMeta("machine.load_samples", EncodeLoadSeries(series));
}

// The re-run plan the caller passed in meta.extra (trace/rerun_plan.h), as the
// trace stores and signs it: argv redacted element by element (a plan holding
// a redaction is then never re-run), the working directory filled in, and the
// display command line derived from it. A malformed plan is dropped with the
// reason in `rerun.plan_error`: the recording goes on, it is only never re-run.
static void StoreRerunPlan(RunMetadata* m) {
  auto it = m->extra.find(kRerunPlanKey);
  if (it == m->extra.end()) return;
  auto plan = DecodeRunPlan(it->second, /*require_canonical=*/false);
  if (!plan.ok()) {
    m->extra.erase(it);
    m->extra["rerun.plan_error"] = plan.status().message();
    return;
  }
  plan->argv = RedactArgv(plan->argv);
  for (auto& [name, value] : plan->env) value = RedactIfSecret(name, std::move(value));
  if (plan->cwd.empty()) plan->cwd = m->cwd;
  plan->cwd = RedactSecretsInText(plan->cwd);
  plan->interpreter = RedactSecretsInText(plan->interpreter);
  m->cwd = plan->cwd;
  m->command_line = ShellQuoteArgv(plan->argv);
  // As the writer will store it (it redacts every meta row again): the
  // signature covers these bytes, so they must not change on the way in.
  it->second = RedactIfSecret(kRerunPlanKey, EncodeRunPlan(*plan));
}

Status Recorder::Start(const std::string& path, const RunMetadata& meta, RecorderOptions options) {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (active_.load()) return FailedPrecondition("a recording is already active; stop it before starting another");
  RunMetadata m = meta;
  if (m.start_monotonic_ns == 0) m.start_monotonic_ns = MonotonicNowNs();
  if (m.start_unix_ns == 0) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m.start_unix_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  if (m.cwd.empty()) {
    char cwd[4096] = {};
    if (getcwd(cwd, sizeof(cwd) - 1)) m.cwd = cwd;
  }
  if (m.host.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) m.host = host;
  }
  StoreRerunPlan(&m);
  trust::AddSignature(&m);  // every way of recording signs (docs/DIFF.md)
  MAGNETON_ASSIGN_OR_RETURN(auto writer, TraceWriter::Create(path, m, options.writer));
  auto* rec = new Recorder(std::move(writer), g_generation.fetch_add(1) + 1, options.record_values);
  if (options.record_values) {
    rec->writer_->SetMeta("values", "fingerprints");
    rec->fingerprint_name_id_ = rec->InternString(kFingerprintOpName);
  }
  if (options.sample_energy) {
    auto session = EnergySession::Start(rec->writer_.get());
    if (session.ok()) {
      rec->energy_ = std::move(session).value();
    } else {
      rec->writer_->SetMeta("energy.status", "no energy recorded: " + session.status().message());
    }
  }
  if (auto sampler = record::LoadSampler::Start(); sampler.ok()) {
    rec->load_start_ = std::make_unique<MachineLoadStart>(MachineLoadStart{std::move(sampler).value()});
  } else {
    rec->writer_->SetMeta("machine.load_error", sampler.status().message());
  }
  active_.store(rec, std::memory_order_release);
  return Status::Ok();
}

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

void Recorder::WaitForRefs() {
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
  rec->WriteWindowMeta();
  rec->WriteMachineLoadMeta();
  Status st = rec->energy_ ? rec->energy_->Stop() : Status::Ok();
  {
    std::lock_guard<std::mutex> state_lock(rec->state_->mu);
    // How many values the recorder let go of (storage freed or written);
    // what it still held at the end is what was live.
    rec->writer_->SetMeta("recorder.tensors_forgotten", std::to_string(rec->state_->tensors_forgotten));
    rec->writer_->SetMeta("recorder.tensors_held_at_stop", std::to_string(rec->state_->tensors.size()));
    rec->writer_->SetMeta("recorder.unfingerprinted_nested_inputs",
                          std::to_string(rec->state_->fresh_nested_inputs));
    if (rec->record_values_) {
      rec->writer_->SetMeta("recorder.device_fingerprints", std::to_string(rec->device_fingerprints_.load()));
      rec->writer_->SetMeta("recorder.device_fingerprints_skipped",
                            std::to_string(rec->device_fingerprints_skipped_.load()));
      rec->writer_->SetMeta("recorder.device_fingerprint_errors",
                            std::to_string(rec->device_fingerprint_errors_.load()));
      std::lock_guard<std::mutex> fp_lock(rec->state_->fingerprint_mu);
      rec->writer_->SetMeta("recorder.fingerprints_reused", std::to_string(rec->state_->fingerprints_reused));
    }
  }
  Status closed = rec->writer_->Close();
  if (st.ok()) st = closed;
  delete rec;
  return st;
}

int64_t Recorder::InternString(std::string_view s) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto [it, inserted] = state_->strings.try_emplace(std::string(s), static_cast<int64_t>(state_->strings.size()));
  if (inserted) writer_->AppendString(it->second, it->first);
  return it->second;
}

int64_t Recorder::InternFrame(int64_t file_id, int64_t line, int64_t function_id) {
  std::lock_guard<std::mutex> lock(state_->mu);
  uint64_t h = Mix(Mix(static_cast<uint64_t>(file_id), static_cast<uint64_t>(line)), static_cast<uint64_t>(function_id));
  auto& candidates = state_->frame_index[h];
  for (int64_t id : candidates) {
    const Frame& f = state_->frames[id];
    if (f.file_id == file_id && f.line == line && f.function_id == function_id) return id;
  }
  Frame f{static_cast<int64_t>(state_->frames.size()), file_id, line, function_id};
  state_->frames.push_back(f);
  candidates.push_back(f.id);
  writer_->AppendFrame(f);
  return f.id;
}

int64_t Recorder::InternCallPath(int64_t parent_path_id, int64_t frame_id) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto [it, inserted] = state_->call_paths.try_emplace({parent_path_id, frame_id},
                                                       static_cast<int64_t>(state_->call_paths.size()));
  if (inserted) writer_->AppendCallPath({it->second, frame_id, parent_path_id});
  return it->second;
}

int64_t Recorder::InternScope(int64_t parent, std::string_view name, std::string_view type,
                              int64_t init_call_path_id, std::string_view init_args) {
  int64_t name_id = InternString(name);
  int64_t type_id = InternString(type);
  std::lock_guard<std::mutex> lock(state_->mu);
  auto [it, inserted] =
      state_->scopes.try_emplace({parent, name_id, type_id}, static_cast<int64_t>(state_->scopes.size()));
  if (inserted) {
    writer_->AppendScope({it->second, name_id, type_id, parent, init_call_path_id, std::string(init_args)});
  }
  return it->second;
}

void Recorder::PushScope(std::string_view name, std::string_view type) {
  ThreadState& ts = Local(generation_);
  int64_t parent = ts.scopes.empty() ? kNoId : ts.scopes.back();
  int64_t id = InternScope(parent, name, type);
  ts.scopes.push_back(id);
}

void Recorder::PopScope() {
  ThreadState& ts = Local(generation_);
  if (!ts.scopes.empty()) ts.scopes.pop_back();
}

int64_t Recorder::BeginOp(int64_t name_id, int64_t call_path_id, int64_t scope_id, uint64_t correlation_id) {
  ThreadState& ts = Local(generation_);
  PendingOp& p = ts.ops.emplace_back();
  OpEvent& op = p.event;
  op.id = next_op_id_.fetch_add(1, std::memory_order_relaxed);
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

int64_t Recorder::InternRuntimeState(const std::map<std::string, std::string>& values) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto [it, inserted] = state_->runtime_states.try_emplace(values, static_cast<int64_t>(state_->runtime_states.size()));
  if (inserted) writer_->AppendRuntimeState({it->second, values});
  return it->second;
}

void Recorder::SetThreadStateId(int64_t state_id) { Local(generation_).state_id = state_id; }

int64_t Recorder::ThreadStateId() const { return Local(generation_).state_id; }

void Recorder::AddStateSetter(StateSetter setter) {
  if (setter.t_ns == 0) setter.t_ns = MonotonicNowNs();
  if (setter.thread_id == 0) setter.thread_id = Local(generation_).os_tid;
  writer_->AppendStateSetter(std::move(setter));
}

size_t Recorder::OpDepth() const { return Local(generation_).ops.size(); }

int64_t Recorder::ResolveTensor(const TensorView& t, bool is_output, int64_t op_id, int64_t viewed_id,
                                bool buffer_write) {
  const TensorKey key = KeyOf(t);
  std::unique_lock<std::mutex> lock(state_->mu);
  auto it = state_->tensors.find(key);
  if (it != state_->tensors.end()) {
    // An input is whatever value last lived under this key. An output is new,
    // unless this op or one nested in it (a later id) already produced it, or
    // it is a view identical to the input it views (view(same shape),
    // contiguous() of a contiguous tensor): the same value, so later reads of
    // the input do not seem to depend on the op that made the alias.
    if (!is_output) return it->second.id;
    if (it->second.producer_op_id >= op_id) {
      // Made by this op or a nested one. Its values are final now: a buffer
      // that a nested aten::empty allocated and this op's kernel filled
      // (native_layer_norm's result), or copy_'s written self, gets its
      // fingerprint here, or it would have none.
      const int64_t id = it->second.id;
      if (it->second.producer_op_id > op_id && it->second.buffer_write) {
        // Written into its buffer by a nested op, and maybe again by this
        // op's kernel since (TensorEntry::buffer_write): fingerprinted anew,
        // as this op's output. The row is replaced (the program reads the
        // final values), and what was kept for the earlier values goes.
        it->second.producer_op_id = op_id;
        it->second.buffer_write = false;
        if (it->second.fingerprinted) {
          it->second.fingerprinted = false;
          std::lock_guard<std::mutex> fp_lock(state_->fingerprint_mu);
          state_->DropCachedLocked(id);
        }
      }
      if (!record_values_ || !t.has_readable_values() || it->second.fingerprinted || t.uninitialized) return id;
      // A view op handing back its nested view of an unwritten buffer
      // (select over as_strided inside index_select) wrote nothing either.
      if (t.is_view && state_->uninitialized_ids.count(id)) return id;
      it->second.fingerprinted = true;
      state_->uninitialized_ids.erase(id);  // written: its views hold values now
      lock.unlock();
      FingerprintValue(id, t, viewed_id);
      return id;
    }
    if (t.is_view && viewed_id != kNoId && it->second.id == viewed_id) return it->second.id;
  }
  // An input first seen inside a nested op, that no outer op's inputs held,
  // was made inside its parent without a recorded op: an output buffer the
  // kernel allocated (cat's result before narrow(...).copy_, all's result
  // before as_strided). Its values are whatever the allocator left there, so
  // fingerprinting it gave the same program different fingerprints from run
  // to run (290 of 3 317 tensors of one GPT-2 generate, with one thread or
  // two). The op that fills it fingerprints the result.
  const bool fresh_nested_input = !is_output && t.nested_input;
  if (fresh_nested_input && record_values_) ++state_->fresh_nested_inputs;
  // Such a buffer, an allocation's output, and any view of either, hold no
  // values yet: narrow(result) inside cat reads garbage as much as result.
  const bool uninitialized = fresh_nested_input || t.uninitialized ||
                             (t.is_view && viewed_id != kNoId && state_->uninitialized_ids.count(viewed_id));
  const bool fingerprint = record_values_ && t.has_readable_values() && !uninitialized;
  int64_t id = NewTensor(t, is_output, op_id, &key, fingerprint, is_output && buffer_write);
  if (uninitialized && record_values_) state_->uninitialized_ids.insert(id);
  lock.unlock();
  if (fingerprint) FingerprintValue(id, t, viewed_id);
  return id;
}

int64_t Recorder::NewTensor(const TensorView& t, bool is_output, int64_t op_id, const void* key_ptr,
                            bool fingerprinted, bool buffer_write) {
  const TensorKey& key = *static_cast<const TensorKey*>(key_ptr);
  // Shape and strides go to the writer as spans of the view (no vector per
  // tensor on the traced thread).
  TensorMeta meta;
  meta.id = state_->next_tensor_id++;
  meta.storage_addr = t.storage_addr;
  meta.storage_offset = t.storage_offset;
  meta.dtype = std::string(t.dtype);
  meta.device = std::string(t.device);
  meta.version = t.version;
  meta.producer_op_id = is_output ? op_id : kNoId;
  const TensorEntry entry{meta.id, meta.producer_op_id, fingerprinted, buffer_write};
  auto [slot, inserted] = state_->tensors.try_emplace(key, entry);
  if (!inserted) {
    // A new value under the same key (written without a version bump): the
    // old id is never looked up again, nor is what was kept for its views.
    {
      std::lock_guard<std::mutex> fp_lock(state_->fingerprint_mu);
      state_->DropCachedLocked(slot->second.id);
    }
    slot->second = entry;
  }
  if (key.storage_uid != 0) {
    // A write bumps the version counter that all views of a storage share,
    // so this storage's values at older versions can no longer be read
    // through it. (A tensor with a counter of its own on the same storage,
    // x.data, then reads as a new value: a lost edge, never a stale one.)
    std::vector<TensorKey>& keys = state_->keys_by_storage[key.storage_uid];
    std::erase_if(keys, [&](const TensorKey& k) {
      if (k.version >= key.version) return false;
      state_->ForgetLocked(k);
      return true;
    });
    if (inserted) keys.push_back(key);
  }
  if (state_->tensors.size() >= state_->sweep_at) storage_sweep_due_.store(true, std::memory_order_relaxed);
  writer_->AppendTensor(meta, std::span<const int64_t>(t.sizes, t.ndim),
                        t.strides ? std::span<const int64_t>(t.strides, t.ndim) : std::span<const int64_t>());
  return meta.id;
}

StatusOr<std::string> Recorder::EncodeValueFingerprint(const TensorBuffer& buffer) {
  MAGNETON_ASSIGN_OR_RETURN(Fingerprint fp, ComputeFingerprint(buffer, ValueFingerprintOptions()));
  return EncodeFingerprint(fp);
}

StatusOr<std::string> Recorder::EncodeDeviceValueFingerprint(const DeviceValueReader& reader, std::string_view dtype,
                                                             const std::vector<int64_t>& shape) {
  MAGNETON_ASSIGN_OR_RETURN(DType parsed, ParseDType(dtype));
  const FingerprintOptions options = ValueFingerprintOptions();
  const DeviceValueRequest request = MakeDeviceValueRequest(shape, options);
  DeviceValueParts parts;
  MAGNETON_RETURN_IF_ERROR(reader.ReadParts(request, &parts));
  MAGNETON_ASSIGN_OR_RETURN(Fingerprint fp, FingerprintFromParts(parsed, request, parts, options));
  return EncodeFingerprint(fp);
}

void Recorder::ForgetAllValues() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->tensors_forgotten += static_cast<int64_t>(state_->tensors.size());
  state_->tensors.clear();
  state_->keys_by_storage.clear();
  state_->uninitialized_ids.clear();
  state_->sweep_at = State::kSweepFloor;
  std::lock_guard<std::mutex> fp_lock(state_->fingerprint_mu);
  state_->fingerprints.clear();
  state_->fingerprint_bytes_cached = 0;
}

void Recorder::ForgetStorages(const std::vector<uint64_t>& storage_uids) {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (uint64_t uid : storage_uids) {
    auto it = state_->keys_by_storage.find(uid);
    if (it == state_->keys_by_storage.end()) continue;
    for (const TensorKey& k : it->second) state_->ForgetLocked(k);
    state_->keys_by_storage.erase(it);
  }
  // What is left is on live storages: ask again once it has doubled.
  state_->sweep_at = std::max(State::kSweepFloor, 2 * state_->tensors.size());
  storage_sweep_due_.store(false, std::memory_order_relaxed);
}

void Recorder::FingerprintValue(int64_t tensor_id, const TensorView& t, int64_t viewed_id) {
  const uint64_t layout_hash = ValueLayoutHash(t);
  // Reuse needs a version counter that moves on every write: inference-mode
  // tensors have none, so their values may have changed under the same id.
  const bool cacheable = t.version_tracked;
  const bool reusable = viewed_id != kNoId && cacheable;
  if (reusable) {
    std::shared_ptr<const std::string> cached;
    {
      std::lock_guard<std::mutex> lock(state_->fingerprint_mu);
      if (const ViewFingerprint* v = state_->FindCachedLocked(viewed_id, t.storage_offset, layout_hash)) {
        cached = v->encoded;
        ++state_->fingerprints_reused;
        // The view's own views (view(...).t()) find it under its id too.
        CacheFingerprintLocked(tensor_id, t.storage_offset, layout_hash, cached);
      }
    }
    if (cached) {
      writer_->AppendFingerprint(tensor_id, std::string(kFingerprintKind), *cached);
      return;
    }
  }
  // Computed here, on the thread that owns the value, while it is alive;
  // only the fingerprint travels, never the values.
  auto dtype = ParseDType(t.dtype);
  if (!dtype.ok()) return;  // complex, fp8, ...: no fingerprint, no match
  TensorBuffer buffer;
  buffer.data = t.host_data;
  buffer.dtype = *dtype;
  buffer.shape.assign(t.sizes, t.sizes + t.ndim);
  if (t.strides) buffer.strides.assign(t.strides, t.strides + t.ndim);
  // On a device, the span also covers waiting for the work that produces the
  // value (the reader synchronises with it): the recorder's time either way.
  const int64_t start_ns = MonotonicNowNs();
  auto fp = t.host_data ? EncodeValueFingerprint(buffer)
                        : EncodeDeviceValueFingerprint(*t.device_values, t.dtype, buffer.shape);
  const int64_t end_ns = MonotonicNowNs();
  ThreadState& ts = Local(generation_);
  if (!ts.ops.empty()) ts.ops.back().recorder_spans.push_back({start_ns, end_ns});
  if (!t.host_data) NoteDeviceFingerprint(fp.status());
  if (!fp.ok()) return;
  auto encoded = std::make_shared<const std::string>(std::move(fp).value());
  writer_->AppendFingerprint(tensor_id, std::string(kFingerprintKind), *encoded);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(state_->fingerprint_mu);
    CacheFingerprintLocked(tensor_id, t.storage_offset, layout_hash, encoded);
    if (reusable) CacheFingerprintLocked(viewed_id, t.storage_offset, layout_hash, encoded);
  }
}

void Recorder::CacheFingerprintLocked(int64_t value_id, int64_t storage_offset, uint64_t layout_hash,
                                      const std::shared_ptr<const std::string>& encoded) {
  // Entries go with their value (ForgetLocked), so the cache holds the live
  // values' fingerprints; this bound is for a program that keeps very many
  // values alive, or one value viewed in ever new layouts. Clearing costs
  // only recomputation, never a wrong fingerprint.
  constexpr size_t kMaxCachedBytes = 32u << 20;
  if (state_->fingerprint_bytes_cached + encoded->size() > kMaxCachedBytes) {
    state_->fingerprints.clear();
    state_->fingerprint_bytes_cached = 0;
  }
  if (ViewFingerprint* v = state_->FindCachedLocked(value_id, storage_offset, layout_hash)) {
    state_->fingerprint_bytes_cached -= v->encoded->size();
    v->encoded = encoded;
  } else {
    state_->fingerprints[value_id].push_back({storage_offset, layout_hash, encoded});
  }
  state_->fingerprint_bytes_cached += encoded->size();
}

void Recorder::NoteDeviceFingerprint(const Status& status) {
  if (status.ok()) {
    device_fingerprints_.fetch_add(1, std::memory_order_relaxed);
  } else if (status.code() == StatusCode::kUnavailable) {
    device_fingerprints_skipped_.fetch_add(1, std::memory_order_relaxed);
  } else {
    device_fingerprint_errors_.fetch_add(1, std::memory_order_relaxed);
    // The first failure says why; the count says how often.
    if (!device_error_noted_.exchange(true)) writer_->SetMeta("recorder.device_fingerprint_error", status.message());
  }
}

void Recorder::AddInput(int32_t slot, const TensorView& tensor) {
  ThreadState& ts = Local(generation_);
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  const int64_t id = ResolveTensor(tensor, false, p.event.id);
  p.links.push_back({p.event.id, TensorRole::kInput, slot, id});
  p.input_storages.emplace_back(tensor.storage_addr, id);
}

void Recorder::AddOverwrittenInput(int32_t slot, const TensorView& tensor) {
  ThreadState& ts = Local(generation_);
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  const TensorKey key = KeyOf(tensor);
  int64_t id;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    id = NewTensor(tensor, /*is_output=*/true, p.event.id, &key, /*fingerprinted=*/false, /*buffer_write=*/true);
  }
  p.links.push_back({p.event.id, TensorRole::kInput, slot, id});
  p.input_storages.emplace_back(tensor.storage_addr, id);
}

void Recorder::AddOutput(int32_t slot, const TensorView& tensor) {
  ThreadState& ts = Local(generation_);
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  int64_t viewed_id = kNoId;
  bool aliases_input = false;
  for (const auto& [addr, id] : p.input_storages) {
    if (addr != tensor.storage_addr) continue;
    aliases_input = true;
    if (tensor.is_view) viewed_id = id;
  }
  // Not a view, yet in an input's buffer: the op wrote into it (add_, out=).
  const bool buffer_write = aliases_input && !tensor.is_view;
  p.links.push_back(
      {p.event.id, TensorRole::kOutput, slot, ResolveTensor(tensor, true, p.event.id, viewed_id, buffer_write)});
}

void Recorder::EndOp(std::string args) { EndOp(std::move(args), 0, MonotonicNowNs()); }

void Recorder::EndOp(std::string args, int64_t start_ns, int64_t end_ns) {
  ThreadState& ts = Local(generation_);
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  if (start_ns > 0) p.event.start_ns = start_ns;
  p.event.end_ns = end_ns;
  p.event.args = std::move(args);
  // The recorder's spans nest in the op when they lie inside its interval;
  // an engine that reads the end time before its outputs are fingerprinted
  // (ggml) leaves them after it, beside the op in its parent.
  const int64_t outer_parent = p.event.parent_id;
  for (const RecorderSpan& span : p.recorder_spans) {
    OpEvent r;
    r.id = ReserveOpId();
    r.name_id = fingerprint_name_id_;
    r.thread_id = p.event.thread_id;
    r.parent_id = span.start_ns >= p.event.start_ns && span.end_ns <= p.event.end_ns ? p.event.id : outer_parent;
    r.scope_id = p.event.scope_id;
    r.call_path_id = p.event.call_path_id;
    r.start_ns = span.start_ns;
    r.end_ns = span.end_ns;
    writer_->AppendOp(std::move(r), {});
  }
  writer_->AppendOp(std::move(p.event), p.links);
  ts.ops.pop_back();
}

int64_t Recorder::DetachOp(int64_t start_ns, int64_t dispatched_ns) {
  ThreadState& ts = Local(generation_);
  if (ts.ops.empty()) return kNoId;
  PendingOp& p = ts.ops.back();
  p.event.end_ns = MonotonicNowNs();
  if (start_ns > 0 && start_ns < p.event.start_ns) p.event.start_ns = start_ns;
  p.dispatched_ns = dispatched_ns > 0 ? dispatched_ns : p.event.end_ns;
  const int64_t id = p.event.id;
  {
    std::lock_guard<std::mutex> lock(state_->held_mu);
    state_->detached[id] = std::move(p);
  }
  ts.ops.pop_back();
  return id;
}

bool Recorder::ReattachOp(int64_t op_id) {
  PendingOp p;
  {
    std::lock_guard<std::mutex> lock(state_->held_mu);
    auto it = state_->detached.find(op_id);
    if (it == state_->detached.end()) return false;
    p = std::move(it->second);
    state_->detached.erase(it);
  }
  ThreadState& ts = Local(generation_);
  ts.ops.emplace_back() = std::move(p);
  return true;
}

void Recorder::HoldOp(std::string args, std::string name, std::string module) {
  ThreadState& ts = Local(generation_);
  if (ts.ops.empty()) return;
  PendingOp& p = ts.ops.back();
  p.event.args = std::move(args);
  // Fingerprints read after the op's detached end: recorder ops beside it.
  for (const RecorderSpan& span : p.recorder_spans) {
    OpEvent r;
    r.id = ReserveOpId();
    r.name_id = fingerprint_name_id_;
    r.thread_id = ts.os_tid;
    r.parent_id = p.event.parent_id;
    r.scope_id = p.event.scope_id;
    r.call_path_id = p.event.call_path_id;
    r.start_ns = span.start_ns;
    r.end_ns = span.end_ns;
    writer_->AppendOp(std::move(r), {});
  }
  {
    std::lock_guard<std::mutex> lock(state_->held_mu);
    state_->held.push_back({std::move(p.event), std::move(p.links), std::move(name), std::move(module), p.dispatched_ns});
  }
  ts.ops.pop_back();
}

std::vector<Recorder::HeldOp> Recorder::TakeHeldOps() {
  std::lock_guard<std::mutex> lock(state_->held_mu);
  std::vector<HeldOp> out;
  out.swap(state_->held);
  return out;
}

void Recorder::WriteHeldOps() {
  for (HeldOp& h : TakeHeldOps()) writer_->AppendOp(std::move(h.event), h.links);
}

int64_t Recorder::AddTensor(TensorMeta meta) {
  std::lock_guard<std::mutex> lock(state_->mu);
  meta.id = state_->next_tensor_id++;
  int64_t id = meta.id;
  writer_->AppendTensor(std::move(meta));
  return id;
}

void Recorder::RecordCompletedOp(OpEvent op, std::vector<OpTensor> links) {
  if (op.state_id == kNoId) op.state_id = Local(generation_).state_id;
  for (OpTensor& l : links) l.op_id = op.id;
  writer_->AppendOp(std::move(op), links);
}

void Recorder::AddFingerprint(int64_t tensor_id, std::string encoded) {
  writer_->AppendFingerprint(tensor_id, std::string(kFingerprintKind), std::move(encoded));
}

void Recorder::SetConfig(std::string key, std::string value, std::string source) {
  writer_->AppendConfig({std::move(key), std::move(value), std::move(source)});
}

void Recorder::SetMeta(const std::string& key, const std::string& value) { writer_->SetMeta(key, value); }

void Recorder::AppendEnergySample(EnergySample sample) { writer_->AppendEnergySample(std::move(sample)); }

Status Recorder::Flush() { return writer_->Flush(); }

}  // namespace magneton
