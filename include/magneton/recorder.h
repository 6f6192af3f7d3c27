// The in-process recording session that every engine hook feeds: it assigns
// op and tensor ids, tracks tensor identity through views and in-place ops,
// interns names, frames and scopes, and hands finished records to the writer.
// This header is the facade the hooks call; the work is done by parts with
// one job each, private to src/record/ (recorder_parts.h), so that their
// state and locks are not part of the API and a change to one rebuilds no hook.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/clock.h"
#include "magneton/status.h"
#include "magneton/trace.h"
#include "magneton/trace_writer.h"

namespace magneton {

struct DeviceValueRequest;  // fingerprint/value_parts.h
struct DeviceValueParts;

// Reads what a fingerprint needs of values this thread cannot read in place
// (GPU memory), where they live: block moments and the sample grid's values,
// a few scalars and at most a few thousand values, never the tensor
// (docs/TRACE_FORMAT.md, "Device fingerprints"). The hook that saw the tensor
// implements it (torch: ATen reductions issued from C++ on a side stream).
// Unavailable: not now (a CUDA graph is being captured), counted as skipped;
// any other error is counted as a failure. Neither is ever fatal to the op.
class DeviceValueReader {
 public:
  virtual ~DeviceValueReader() = default;
  virtual Status ReadParts(const DeviceValueRequest& request, DeviceValueParts* parts) const = 0;
};

// A tensor as a hook sees it, borrowed for the duration of the call.
struct TensorView {
  uint64_t storage_addr = 0;
  int64_t storage_offset = 0;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;  // may be null for non-strided layouts
  int32_t ndim = 0;
  std::string_view dtype;
  std::string_view device;
  int64_t version = 0;
  // False when writes do not bump `version` (torch inference-mode tensors).
  bool version_tracked = true;
  // Address of element [0,...,0] when the values are readable from this
  // thread (host memory), else null: only then can --values fingerprint it.
  const void* host_data = nullptr;
  // For values that are not host memory (a GPU tensor): their reader, when
  // --values may fingerprint them where they live; null otherwise. Borrowed
  // for the duration of the call, like the view.
  const DeviceValueReader* device_values = nullptr;
  bool has_readable_values() const { return host_data != nullptr || device_values != nullptr; }
  // An output that aliases an input of the same op without writing it (a
  // torch view op: t, view, select). Only such a value may take the cached
  // fingerprint of an earlier view of the same input value (--values), and
  // one identical to its input (same storage, offset, layout, version) is
  // that input's value, not a new one.
  bool is_view = false;
  // Which buffer, when the hook can tell (0: it cannot): an id never given
  // to another buffer during the recording. Allocators hand a freed address
  // to the next allocation at once, so by address alone a fresh buffer
  // (a kernel's output, read by a nested op before it is written) reads as
  // the unrelated value that last lived there: a false dataflow edge that
  // differs from run to run.
  uint64_t storage_uid = 0;
  // An input of a nested op, from a hook whose ops can allocate buffers
  // without a recorded op (torch kernels: cat's result before
  // narrow(...).copy_). When the recorder has not seen this value before, it
  // is such a buffer and its values are whatever the allocator left there:
  // it is linked but not fingerprinted.
  bool nested_input = false;
  // An output whose values the op did not write: an allocation's (torch
  // aten::empty*, resize_). Not fingerprinted, and neither are views of it,
  // until an op writes it and hands it back as its output.
  bool uninitialized = false;
};

struct RecorderOptions {
  TraceWriterOptions writer;
  // Sample the meters `magneton meters` would choose, on the ops' clock.
  bool sample_energy = false;
  // Fingerprint every new tensor value (record --values); never raw values.
  bool record_values = false;
};

struct TensorBuffer;  // fingerprint/fingerprint.h
namespace record {
struct RecorderParts;  // record/recorder_parts.h
}  // namespace record


// One thread's in-flight marker for Recorder::Ref (see src/record/recorder.cc
// for the stop protocol). Owned by one thread at a time, on a cache line of
// its own, so entering a callback writes only memory no other thread writes.
struct alignas(64) RecorderRefSlot {
  std::atomic<uint32_t> depth{0};  // Refs alive on the owning thread
  std::atomic<bool> in_use{false};
  RecorderRefSlot* next = nullptr;  // registry list; slots are never freed
};

class Recorder {
 public:
  // A child the process forks while a session is active has none: its hooks
  // find no recording (meta recorder.forked_children counts such children).
  static Status Start(const std::string& path, const RunMetadata& meta, RecorderOptions options = {});
  // Stops hooks from seeing the session, waits until every Ref taken while it
  // was active is gone, then closes the trace. Fails (and stops nothing) on a
  // thread that holds a Ref itself, which would wait for itself forever.
  static Status Stop();
  // Whether a session is active. The pointer is for code that controls
  // Start/Stop itself (tests, a program recording its own work); anything a
  // concurrent Stop can race with (hooks, the C ABI, bindings) holds a Ref.
  static Recorder* Active() { return active_.load(std::memory_order_acquire); }
  static bool IsRecording() { return Active() != nullptr; }

  // The active session, held for one hook callback: Stop cannot free it
  // while this is alive. Null (false) when nothing is recording. Keep it for
  // the callback only, never across an op's begin and end callbacks: an op
  // whose end comes under another session is dropped by generation().
  class Ref {
   public:
    Ref() : rec_(Enter(&slot_)) {}
    ~Ref() {
      if (rec_) slot_->depth.store(slot_->depth.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    }
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    Recorder* get() const { return rec_; }
    Recorder* operator->() const { return rec_; }
    Recorder& operator*() const { return *rec_; }
    explicit operator bool() const { return rec_ != nullptr; }

   private:
    RecorderRefSlot* slot_;
    Recorder* rec_;
  };

  int64_t InternString(std::string_view s);
  int64_t InternFrame(int64_t file_id, int64_t line, int64_t function_id);
  // The path whose innermost frame is frame_id, called from parent_path.
  int64_t InternCallPath(int64_t parent_path_id, int64_t frame_id);

  // A module scope named `name` (of class `type`) inside parent_scope_id.
  // init_call_path_id / init_args: how its module was constructed
  // (Scope::init_*), kept when the scope is new (the first module seen there).
  int64_t InternScope(int64_t parent_scope_id, std::string_view name, std::string_view type,
                      int64_t init_call_path_id = kNoId, std::string_view init_args = {});
  // A per-thread scope stack, for engines that announce scopes explicitly.
  void PushScope(std::string_view name, std::string_view type);
  void PopScope();

  // Op lifecycle on the calling thread; ops nest by thread-local stack.
  // kNoId for call_path_id or scope_id: inherit from the enclosing op, else
  // (scope only) the thread's pushed scope.
  int64_t BeginOp(int64_t name_id, int64_t call_path_id, int64_t scope_id = kNoId, uint64_t correlation_id = 0);
  void AddInput(int32_t slot, const TensorView& tensor);
  void AddOutput(int32_t slot, const TensorView& tensor);
  // An argument the op only writes (an out= argument, copy_'s self): linked
  // as an input for its slot, but as a new value produced by this op, never
  // as the earlier value that had the same address, layout and version (a
  // freed result the allocator handed out again). Not fingerprinted.
  void AddOverwrittenInput(int32_t slot, const TensorView& tensor);
  void EndOp(std::string args);
  // Storages (TensorView::storage_uid) that a hook found freed when it looked
  // for them: the values registered on them are forgotten, so the recorder's
  // memory follows what is live rather than what ran. A hook looks when its
  // own table of storages has grown, or when StorageSweepDue says the
  // recorder's values have (then it calls this even with none found).
  void ForgetStorages(const std::vector<uint64_t>& storage_uids);
  bool StorageSweepDue() const { return storage_sweep_due_.load(std::memory_order_relaxed); }
  // Same, with the interval the engine measured (MonotonicNowNs clock).
  void EndOp(std::string args, int64_t start_ns, int64_t end_ns);
  // Depth of the current thread's op stack (0: not inside a recorded op).
  size_t OpDepth() const;

  // Ops whose outputs come later (a jitted JAX call ends when it is
  // dispatched, its results are read once they are ready, and its times are
  // set from XLA's profile at the recording's end: record/xla_profile.cc).
  // DetachOp ends this thread's innermost op now (its interval so far) and
  // takes it off the stack, so ops that follow do not nest in it; it returns
  // the op's id (kNoId: no op). start_ns, when > 0, is when the call began (a
  // hook that begins the op after the call returned); dispatched_ns, when the
  // call returned (0: now). ReattachOp(id) puts it back on the calling
  // thread's stack for AddOutput; HoldOp then ends it with its detached times
  // and keeps it, written by TakeHeldOps' caller (RecordCompletedOp) or by
  // WriteHeldOps as it is.
  // name and module: what the profile knows the call by ("jax::jit(mlp)",
  // its HLO module "jit_mlp").
  struct HeldOp {
    OpEvent event;
    std::vector<OpTensor> links;
    std::string name;
    std::string module;
    int64_t dispatched_ns = 0;  // when the call returned (MonotonicNowNs)
  };
  int64_t DetachOp(int64_t start_ns = 0, int64_t dispatched_ns = 0);
  bool ReattachOp(int64_t op_id);
  void HoldOp(std::string args, std::string name, std::string module);
  std::vector<HeldOp> TakeHeldOps();
  void WriteHeldOps();

  // Engines that report finished ops after the fact and know their own
  // dataflow (ONNX Runtime's profile + graph) name tensors explicitly instead
  // of by storage key. AddTensor registers a value (meta.id is assigned and
  // returned; set producer_op_id to an id from ReserveOpId or kNoId).
  // RecordCompletedOp writes an op with its own times, thread, scope and
  // links (op.id from ReserveOpId; link op ids are set here); an op without
  // a state_id takes the calling thread's (SetThreadStateId). Ids from
  // ReserveOpId are in call order, so an engine that reserves in start order
  // keeps the trace's ops in start order.
  int64_t ReserveOpId() { return next_op_id_.fetch_add(1, std::memory_order_relaxed); }
  int64_t AddTensor(TensorMeta meta);
  void RecordCompletedOp(OpEvent op, std::vector<OpTensor> links);
  // The fingerprint --values records for a value (same options for every
  // engine, so traces of different engines compare), encoded.
  static StatusOr<std::string> EncodeValueFingerprint(const TensorBuffer& buffer);
  // The same fingerprint from parts read where the values live (same
  // options, same sample grid): comparable with the host one.
  static StatusOr<std::string> EncodeDeviceValueFingerprint(const DeviceValueReader& reader, std::string_view dtype,
                                                            const std::vector<int64_t>& shape);
  // An already encoded value fingerprint (kind kFingerprintKind) of a tensor.
  void AddFingerprint(int64_t tensor_id, std::string encoded);

  // Runtime state (Trace::runtime_states): the id of the state with exactly
  // these values, written the first time it is seen. Hooks call it only when
  // their cheap view of the state changed, so its lock is off the per-op path.
  int64_t InternRuntimeState(const std::map<std::string, std::string>& values);
  // The state BeginOp stamps on this thread's ops from now on (kNoId: none).
  // Per thread, per session: a new session starts every thread at kNoId.
  void SetThreadStateId(int64_t state_id);
  int64_t ThreadStateId() const;
  // A call that set a runtime state key, where the program made it
  // ("file:line:function"); t_ns and thread_id are filled when zero.
  void AddStateSetter(StateSetter setter);

  // Windowed recording (record/window.h, docs/ARCHITECTURE.md "Windowed
  // recording"). Hooks begin no op while the window is closed (WindowOpen;
  // torch's callback is switched off as well, so an op outside the window
  // costs a flag check). The closed time becomes one recorder op,
  // `magneton::unrecorded` ({"from_step", "to_step"}), which keeps it out of
  // the job's energy and time; the values seen before it are forgotten, since
  // nothing watches them being written meanwhile. Each step boundary while
  // the window is open is a zero-length `magneton::step` op ({"step": the
  // step that ended}).
  // schedule: "wait,warmup,active[,repeat]" in steps, or "" (every step).
  Status ConfigureWindow(const std::string& schedule, bool time_gate_open);
  // A step boundary (explicit: magneton.step(); else a framework's step).
  // Returns whether the window is open after it.
  bool Step(bool explicit_call);
  // The time gate (--start-after, --duration); returns whether the window is open.
  bool SetTimeGate(bool open);
  bool WindowOpen() const { return window_open_.load(std::memory_order_relaxed); }

  void SetConfig(std::string key, std::string value, std::string source);
  void SetMeta(const std::string& key, const std::string& value);
  void AppendEnergySample(EnergySample sample);
  Status Flush();

  uint64_t generation() const { return generation_; }
  bool record_values() const { return record_values_; }
  int64_t ops_recorded() const { return next_op_id_.load(std::memory_order_relaxed); }
  TraceWriter* writer() { return writer_.get(); }

  ~Recorder();

 private:
  Recorder(std::unique_ptr<TraceWriter> writer, uint64_t generation, bool record_values);
  // Marks this thread in flight and returns the active session; with none,
  // leaves the mark at once (a null Ref never delays a Stop).
  static Recorder* Enter(RecorderRefSlot** slot);
  // In a child the process forked (pthread_atfork): no session. See recorder.cc.
  static void ForgetInForkedChild();

  static std::atomic<Recorder*> active_;
  std::unique_ptr<TraceWriter> writer_;
  uint64_t generation_;
  bool record_values_;
  // Read or bumped inline by hooks on every op, so they live here and not in
  // parts_; the parts that set them hold their address.
  std::atomic<int64_t> next_op_id_{0};
  std::atomic<bool> storage_sweep_due_{false};  // set by tensor identity
  std::atomic<bool> window_open_{true};         // set by the window
  // Everything else, one part per job (src/record/recorder_parts.h).
  std::unique_ptr<record::RecorderParts> parts_;
};

}  // namespace magneton
