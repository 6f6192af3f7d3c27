// The PyTorch recorder: a global RecordFunction callback built against the
// installed torch, so every ATen op dispatched in eager mode (inside HF
// generate loops, across graph breaks, on any thread) reaches the Recorder
// with its inputs, outputs, module scope and Python call path.
#include <ATen/record_function.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/ScalarType.h>
#include <nanobind/nanobind.h>

#include <Python.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bindings/status_exception.h"
#include "magneton/recorder.h"
#include "pyhooks/python_stack.h"
#include "torch_hook/device_values.h"
#include "torch_hook/value_functions.h"
#include "torch_hook/replay_trace.h"
#include "base/format.h"
#include "torch_hook/c10d_args.h"
#include "torch_hook/torch_names.h"
#include "torch_hook/torch_state.h"
#include "torch_hook/kernel_ops.h"
#include "trace/op_args.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;

namespace magneton {
namespace {

std::mutex g_install_mu;
std::optional<at::CallbackHandle> g_handle;
// Ops this hook recorded since install: says whether torch took part in a
// run that also drove another engine (the trace's `engine` meta).
std::atomic<int64_t> g_ops_recorded{0};
// Whether ops carry the runtime state (on unless bench/op_overhead measures
// what reading it costs).
std::atomic<bool> g_record_state{true};

// TensorView::storage_uid for torch: one id per StorageImpl. The weak
// reference kept beside each id keeps that StorageImpl object allocated
// (torch frees the data at the last strong reference, the object at the last
// weak one), so no new storage can appear at a known address under an old
// id. Entries whose storage is gone are swept, their ids handed back in
// *freed (and *swept set) for the recorder to forget their values:
// - when the map has doubled (it stays within twice the storages alive,
//   plus a floor: the sweep's cost is amortized);
// - when the storages registered since the last sweep total more bytes than
//   an eighth of those alive (or a floor): a dead storage's object, kept by
//   the weak reference, pins the heap around its freed data, so the process
//   grew by about the data of every storage not yet swept (64 MB over the
//   floor's 4096 16 kB activations, GBs with large ones);
// - when the recorder asks (sweep_due): its values have doubled.
class StorageIds {
 public:
  uint64_t Of(const c10::Storage& storage, bool sweep_due, std::vector<uint64_t>* freed, bool* swept) {
    const c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    if (impl == nullptr) return 0;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(impl);
    if (it != ids_.end() && !sweep_due) return it->second.id;
    if (ids_.size() >= sweep_at_ || bytes_since_sweep_ >= sweep_bytes_ || sweep_due) {
      *swept = true;
      size_t live_bytes = 0;
      std::erase_if(ids_, [&](const auto& entry) {
        if (!entry.second.ref.expired()) {
          live_bytes += entry.second.nbytes;
          return false;
        }
        freed->push_back(entry.second.id);
        return true;
      });
      sweep_at_ = std::max<size_t>(kSweepFloor, 2 * ids_.size());
      sweep_bytes_ = std::max<size_t>(kSweepBytesFloor, live_bytes / 8);
      bytes_since_sweep_ = 0;
      it = ids_.find(impl);  // live: not swept
      if (it != ids_.end()) return it->second.id;
    }
    const uint64_t id = next_id_++;
    const size_t nbytes = storage.nbytes();
    ids_.emplace(impl, Entry{storage.getWeakStorageImpl(), id, nbytes});
    bytes_since_sweep_ += nbytes;
    return id;
  }
  // At uninstall: the weak references go (ids keep counting up, never reused).
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    ids_.clear();
    sweep_at_ = kSweepFloor;
    sweep_bytes_ = kSweepBytesFloor;
    bytes_since_sweep_ = 0;
  }

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::StorageImpl> ref;
    uint64_t id;
    size_t nbytes;  // at registration
  };
  static constexpr size_t kSweepFloor = 4096;
  static constexpr size_t kSweepBytesFloor = size_t{16} << 20;
  std::mutex mu_;
  std::unordered_map<const c10::StorageImpl*, Entry> ids_;
  size_t sweep_at_ = kSweepFloor;
  size_t sweep_bytes_ = kSweepBytesFloor;
  size_t bytes_since_sweep_ = 0;
  uint64_t next_id_ = 1;
};
StorageIds g_storage_ids;

std::string_view DeviceName(const c10::Device& d) {
  if (d.is_cpu()) return "cpu";
  thread_local std::unordered_map<int, std::string> names;
  int key = static_cast<int>(d.type()) * 1024 + d.index();
  auto it = names.find(key);
  if (it == names.end()) it = names.emplace(key, d.str()).first;
  return it->second;
}

// Which argument values are enums stored as ints: the schema's real type
// says ScalarType, Layout or MemoryFormat where the IValue holds an int.
enum class EnumArg : uint8_t { kNone, kDtype, kLayout, kMemoryFormat };

EnumArg EnumArgOf(c10::TypePtr t) {
  if (auto opt = t->castRaw<c10::OptionalType>()) t = opt->getElementType();
  if (auto list = t->castRaw<c10::ListType>()) t = list->getElementType();
  if (auto opt = t->castRaw<c10::OptionalType>()) t = opt->getElementType();
  switch (t->kind()) {
    case c10::TypeKind::ScalarTypeType: return EnumArg::kDtype;
    case c10::TypeKind::LayoutType: return EnumArg::kLayout;
    case c10::TypeKind::MemoryFormatType: return EnumArg::kMemoryFormat;
    default: return EnumArg::kNone;
  }
}

// What the schema says about each argument position, kept in OpFacts.
// write_only: arguments an op only writes: out= arguments, and self of the
// in-place ops that overwrite it without reading it (copy_, fill_, zero_,
// the random fills). Their old value is not an input: recording it would
// link the op to whatever earlier value had the same address, layout and
// version (a freed result of the previous iteration that the allocator
// handed out again).
struct ArgSchema {
  std::vector<bool> write_only;
  std::vector<EnumArg> enums;
};

// What the hook needs to know about an op by its name, worked out once per
// thread and name and found with one lookup per callback. Keyed by the name
// pointer (stable for schema-backed ops) and confirmed by content, since
// string-backed names (backward functions) live in per-call storage.
struct OpFacts {
  std::string text;
  // "aten::add.Tensor" interned in the recording of that generation.
  uint64_t generation = 0;
  int64_t name_id = kNoId;
  // The outputs alias the inputs without writing them (schema returns all
  // "Tensor(a)", no "!"): a view op, whose output values are the input's.
  bool view = false;
  // False for allocations, whose outputs hold whatever the allocator left
  // there (resize_ of an out= argument allocates before the kernel writes it).
  bool initializes_outputs = true;
  bool collective = false;  // c10d::*
  // A wrapper event named in the scope-event list (SetScopeEvents): not an
  // op, its nested ops are recorded as if it were not there.
  bool scope_event = false;
  uint64_t scope_events_version = 0;
  ArgSchema schema;
};

// Wrapper RecordFunctions that carry no tensors and only bracket other ops
// (torch.compile's "Torch-Compiled Region: 0/0", "TorchDynamo Cache
// Lookup"): name prefixes, set by the recorder that knows them
// (python/magneton/recorders/torch_compile_kernels.py). Only events
// without a schema qualify, so no ATen op can be hidden by a prefix.
std::mutex g_scope_events_mu;
std::vector<std::string> g_scope_events;
std::atomic<uint64_t> g_scope_events_version{1};

bool IsScopeEventName(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_scope_events_mu);
  for (const std::string& prefix : g_scope_events) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

void SetScopeEvents(std::vector<std::string> prefixes) {
  std::lock_guard<std::mutex> lock(g_scope_events_mu);
  g_scope_events = std::move(prefixes);
  g_scope_events_version.fetch_add(1, std::memory_order_relaxed);
}

OpFacts MakeOpFacts(const at::RecordFunction& fn) {
  static const std::unordered_set<std::string_view> kOverwrite = {
      "aten::copy_",    "aten::fill_",     "aten::zero_",     "aten::normal_",      "aten::uniform_",
      "aten::random_",  "aten::bernoulli_", "aten::exponential_", "aten::geometric_", "aten::cauchy_",
      "aten::log_normal_"};
  OpFacts facts;
  facts.text = fn.name();
  const std::string_view name = facts.text;
  facts.initializes_outputs =
      !name.starts_with("aten::empty") && !name.starts_with("aten::new_empty") && !name.starts_with("aten::resize_");
  facts.collective = IsCollectiveOpName(name);
  facts.scope_events_version = g_scope_events_version.load(std::memory_order_relaxed);
  facts.scope_event = !fn.operator_name() && IsScopeEventName(name);
  if (auto op = fn.operator_name()) {
    if (auto handle = c10::Dispatcher::singleton().findSchema(*op)) {
      const auto& returns = handle->schema().returns();
      facts.view = !returns.empty();
      for (const auto& r : returns) {
        const auto* alias = r.alias_info();
        facts.view = facts.view && alias != nullptr && !alias->isWrite();
      }
      const auto& arguments = handle->schema().arguments();
      ArgSchema& schema = facts.schema;
      schema.write_only.resize(arguments.size(), false);
      schema.enums.resize(arguments.size(), EnumArg::kNone);
      for (size_t i = 0; i < arguments.size(); ++i) {
        schema.write_only[i] = arguments[i].is_out();
        schema.enums[i] = EnumArgOf(arguments[i].real_type());
      }
      if (!schema.write_only.empty() && kOverwrite.count(name)) schema.write_only[0] = true;
    }
  }
  return facts;
}

OpFacts& OpFactsOf(const at::RecordFunction& fn) {
  thread_local std::unordered_map<const char*, OpFacts> cache;
  const char* name = fn.name();
  auto it = cache.find(name);
  if (it != cache.end() && it->second.text == name &&
      it->second.scope_events_version == g_scope_events_version.load(std::memory_order_relaxed)) {
    return it->second;
  }
  OpFacts& facts = cache[name];
  facts = MakeOpFacts(fn);
  return facts;
}

int64_t OpNameId(Recorder& rec, const at::RecordFunction& fn, OpFacts& facts) {
  if (facts.generation == rec.generation() && facts.name_id != kNoId) return facts.name_id;
  std::string full = facts.text;
  if (auto op = fn.operator_name(); op && !op->overload_name.empty()) full += "." + op->overload_name;
  facts.name_id = rec.InternString(full);
  facts.generation = rec.generation();
  return facts.name_id;
}

// initialized: false for the outputs of allocation ops (aten::empty*), whose
// values are whatever the allocator left there: never fingerprinted.
void AddTensor(Recorder& rec, bool output, int32_t slot, const at::Tensor& t, bool is_view = false,
               bool initialized = true, bool overwritten = false) {
  TensorView v;
  v.is_view = is_view;
  v.dtype = DtypeName(t.scalar_type());
  v.device = DeviceName(t.device());
  if (t.is_nested()) {
    // Nested tensors have no single shape; record identity only.
    v.ndim = 0;
  } else {
    v.sizes = t.sizes().data();
    v.ndim = static_cast<int32_t>(t.dim());
    if (t.layout() == c10::kStrided) v.strides = t.strides().data();
  }
  if (t.has_storage() && t.layout() == c10::kStrided) {
    v.storage_addr = reinterpret_cast<uintptr_t>(t.storage().data());
    std::vector<uint64_t> freed;
    bool swept = false;
    v.storage_uid = g_storage_ids.Of(t.storage(), rec.StorageSweepDue(), &freed, &swept);
    if (swept) rec.ForgetStorages(freed);
    v.storage_offset = t.storage_offset();
  } else {
    v.storage_addr = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
  }
  // The op being recorded is already on the thread's stack: depth > 1 is a nested op
  // (TensorIdentity::Resolve, src/record/tensor_identity.cc).
  v.nested_input = !output && rec.OpDepth() > 1;
  v.uninitialized = output && !initialized;
  v.version_tracked = !t.is_inference();
  v.version = v.version_tracked ? static_cast<int64_t>(t._version()) : 0;
  // --values: host memory is read in place; a device's values through the
  // reader, where they live (device_values.h). The reader is borrowed by
  // the recorder only during the calls below.
  std::optional<TorchDeviceValues> device_values;
  if (initialized && rec.record_values()) {
    switch (SelectValuePath(t)) {
      case ValuePath::kHost:
        v.host_data = t.data_ptr();
        break;
      case ValuePath::kDevice:
        device_values.emplace(t);
        v.device_values = &*device_values;
        break;
      case ValuePath::kNone:
        break;
    }
  }
  if (output) {
    rec.AddOutput(slot, v);
  } else if (overwritten) {
    rec.AddOverwrittenInput(slot, v);
  } else {
    rec.AddInput(slot, v);
  }
}

// An int that the schema types as an enum, as its typed object.
void WriteInt(OpArgsWriter& w, int64_t v, EnumArg kind) {
  std::string_view name;
  switch (kind) {
    case EnumArg::kNone: break;
    case EnumArg::kDtype:
      if (v >= 0 && v < static_cast<int64_t>(c10::ScalarType::NumOptions)) {
        name = DtypeName(static_cast<c10::ScalarType>(v));
        w.Typed(kArgDtype, name);
        return;
      }
      break;
    case EnumArg::kLayout:
      name = LayoutName(v);
      if (!name.empty()) return w.Typed(kArgLayout, name);
      break;
    case EnumArg::kMemoryFormat:
      name = MemoryFormatName(v);
      if (!name.empty()) return w.Typed(kArgMemoryFormat, name);
      break;
  }
  w.Int(v);
}

// Writes a non-tensor argument as JSON (trace/op_args.h); tensors become
// {"t": slot}. overwritten: a write-only argument (OpFacts::schema), linked for
// its slot as a new value of this op's (Recorder::AddOverwrittenInput), not
// fingerprinted.
void VisitValue(Recorder& rec, bool output, int32_t& slot, const c10::IValue& iv, OpArgsWriter* args,
                bool is_view = false, bool initialized = true, bool overwritten = false,
                EnumArg kind = EnumArg::kNone) {
  if (iv.isTensor()) {
    const at::Tensor& t = iv.toTensor();
    if (t.defined()) AddTensor(rec, output, slot, t, is_view, initialized && !overwritten, overwritten);
    if (args) {
      if (t.defined()) {
        args->Tensor(slot);
      } else {
        args->Null();
      }
    }
    ++slot;
  } else if (iv.isList() || iv.isTuple()) {
    if (args) args->BeginList();
    auto visit = [&](const c10::IValue& e) {
      VisitValue(rec, output, slot, e, args, is_view, initialized, overwritten, kind);
    };
    if (iv.isList()) {
      for (const c10::IValue& e : iv.toListRef()) visit(e);
    } else {
      for (const c10::IValue& e : iv.toTupleRef().elements()) visit(e);
    }
    if (args) args->EndList();
  } else if (!args) {
    return;
  } else if (iv.isInt()) {
    WriteInt(*args, iv.toInt(), kind);
  } else if (iv.isBool()) {
    args->Bool(iv.toBool());
  } else if (iv.isDouble()) {
    args->Float(iv.toDouble());
  } else if (iv.isNone()) {
    args->Null();
  } else if (iv.isString()) {
    args->String(iv.toStringRef());
  } else if (iv.isDevice()) {
    args->Typed(kArgDevice, iv.toDevice().str());
  } else if (iv.isComplexDouble()) {
    c10::complex<double> c = iv.toComplexDouble();
    args->Complex(c.real(), c.imag());
  } else if (iv.isSymInt() && iv.toSymInt().maybe_as_int()) {
    WriteInt(*args, *iv.toSymInt().maybe_as_int(), kind);
  } else if (iv.isObject()) {
    // A torchbind object (a c10d ProcessGroup, ReduceOp, Work): its class.
    const std::string cls = ObjectClassName(iv);
    args->Typed(kArgUnrecorded, cls.empty() ? iv.tagKind() : cls);
  } else {
    args->Typed(kArgUnrecorded, iv.tagKind());
  }
}

// Stamps this thread's ops with the torch state in effect: a few loads per
// top-level op, compared with the last view this thread saw; only a change
// (or a new session) builds the map and interns it.
void StampTorchState(Recorder& rec) {
  struct Last {
    TorchStateView view;
    uint64_t generation = 0;
    int64_t id = kNoId;
  };
  thread_local Last last;
  const TorchStateView now = ReadTorchState();
  if (last.generation != rec.generation() || !(now == last.view)) {
    last.view = now;
    last.generation = rec.generation();
    last.id = rec.InternRuntimeState(TorchStateValues(now));
  }
  // Another engine on this thread may have set its own state since.
  if (rec.ThreadStateId() != last.id) rec.SetThreadStateId(last.id);
}

// Only the generation travels from start to end: the recorder is held by a
// Ref in each callback, never between them (a stop may free it in between).
struct OpContext : at::ObserverContext {
  uint64_t generation;
  std::string args;
};

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  // removeCallback does not wait for running callbacks: this Ref is what
  // keeps the recorder alive until the callback returns.
  Recorder::Ref rec;
  // Outside the recording window (set_enabled also switches this callback
  // off; the check covers an op that starts while that is under way).
  if (!rec || !rec->WindowOpen() || InOpaqueOp()) return nullptr;
  OpFacts& facts = OpFactsOf(fn);
  if (facts.scope_event) return nullptr;  // its nested ops are recorded as if it were not there
  int64_t name_id = OpNameId(*rec, fn, facts);
  // Only the outermost op of a thread walks Python; nested ops inherit.
  PythonContext py{kNoId, kNoId};
  const bool top_level = rec->OpDepth() == 0;
  if (top_level) {
    py = CurrentPythonContext(*rec);
    if (g_record_state.load(std::memory_order_relaxed)) StampTorchState(*rec);
  }
  rec->BeginOp(name_id, py.call_path_id, py.scope_id, fn.handle());
  if (top_level) g_ops_recorded.fetch_add(1, std::memory_order_relaxed);
  auto ctx = std::make_unique<OpContext>();
  ctx->generation = rec->generation();
  int32_t slot = 0;
  ctx->args.reserve(64);
  OpArgsWriter args(&ctx->args);
  // A collective or point-to-point op: the positional arguments under "args",
  // then what it communicates (docs/TRACE_FORMAT.md "Collectives").
  const bool collective = facts.collective;
  if (collective) {
    args.BeginParams();
    args.Key("args");
  }
  args.BeginList();
  const ArgSchema& schema = facts.schema;
  size_t position = 0;
  for (const c10::IValue& iv : fn.inputs()) {
    const bool overwritten = position < schema.write_only.size() && schema.write_only[position];
    const EnumArg kind = position < schema.enums.size() ? schema.enums[position] : EnumArg::kNone;
    VisitValue(*rec, /*output=*/false, slot, iv, &args, false, true, overwritten, kind);
    ++position;
  }
  args.EndList();
  if (collective) {
    WriteCollectiveFacts(fn, args);
    args.EndParams();
  }
  return ctx;
}

}  // namespace

// kernel_ops.h: the same conversion for the tensors of an op begun outside
// the dispatcher (an Inductor kernel), and the same top-level context.
void AddTorchTensor(Recorder& rec, bool output, int32_t slot, const at::Tensor& t, bool is_view) {
  AddTensor(rec, output, slot, t, is_view);
}

PythonContext TopLevelContext(Recorder& rec) {
  PythonContext py = CurrentPythonContext(rec);
  if (g_record_state.load(std::memory_order_relaxed)) StampTorchState(rec);
  g_ops_recorded.fetch_add(1, std::memory_order_relaxed);
  return py;
}

namespace {

void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext* raw) {
  auto* ctx = static_cast<OpContext*>(raw);
  Recorder::Ref rec;
  // A recording stopped (or restarted) between start and end: drop the op.
  // Generations are unique per Start, so a new session at the old address
  // cannot pass for the old one.
  if (!ctx || !rec || rec->generation() != ctx->generation) return;
  int32_t slot = 0;
  const OpFacts& facts = OpFactsOf(fn);
  for (const c10::IValue& iv : fn.outputs()) {
    VisitValue(*rec, /*output=*/true, slot, iv, nullptr, facts.view, facts.initializes_outputs);
  }
  rec->EndOp(std::move(ctx->args));
}

void Install() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_handle) return;
  // Tests force the device path on CPU tensors this way in a child process.
  if (const char* mode = std::getenv("MAGNETON_DEVICE_FINGERPRINTS")) {
    auto parsed = ParseDeviceFingerprintMode(mode);
    if (parsed.ok()) SetDeviceFingerprintMode(*parsed);
  }
  g_ops_recorded.store(0, std::memory_order_relaxed);
  RefreshSlowTorchState();
  g_handle = at::addGlobalCallback(at::RecordFunctionCallback(&OnOpStart, &OnOpEnd)
                                       .needsInputs(true)
                                       .needsOutputs(true)
                                       .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

// Windowed recording: outside the window torch does not call us at all (a
// disabled callback is dropped from the callbacks torch gathers for an op), so
// an op costs torch's own check. Ops already under way keep their callbacks
// and end normally.
void SetEnabled(bool enabled) {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (!g_handle) return;
  if (enabled) {
    at::reenableCallback(*g_handle);
  } else {
    at::disableCallback(*g_handle);
  }
}

void Uninstall() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (!g_handle) return;
  at::removeCallback(*g_handle);
  g_handle.reset();
  g_storage_ids.Clear();
}

}  // namespace
}  // namespace magneton

NB_MODULE(_torch_hook, m) {
  m.doc() = "Magneton's PyTorch RecordFunction hook (built against the installed torch)";
  m.def("install", &magneton::Install, nb::call_guard<nb::gil_scoped_release>(),
        "Start forwarding every ATen op to the active recording.");
  m.def("uninstall", &magneton::Uninstall, nb::call_guard<nb::gil_scoped_release>());
  m.def("set_enabled", &magneton::SetEnabled, nb::call_guard<nb::gil_scoped_release>(), nb::arg("enabled"),
        "Switches the op callback on or off (windowed recording), without uninstalling it.");
  m.def("is_installed", [] {
    std::lock_guard<std::mutex> lock(magneton::g_install_mu);
    return magneton::g_handle.has_value();
  });
  m.attr("TORCH_VERSION_BUILT") = MAGNETON_TORCH_VERSION;
  m.def("refresh_state", &magneton::RefreshSlowTorchState,
        "Re-reads the torch settings not read at every op (after a Python setter changed one).");
  m.def("set_record_state", [](bool on) { magneton::g_record_state.store(on, std::memory_order_relaxed); },
        nb::arg("on") = true, "Whether ops carry the runtime state (bench/op_overhead --state-cost turns it off to compare).");
  m.def("current_state", [] { return magneton::TorchStateValues(magneton::ReadTorchState()); },
        "The torch runtime state the hook would record for an op on this thread now.");
  m.def("native_state", [] { return magneton::NativeTorchStateValues(magneton::ReadTorchState()); },
        "The part of current_state the hook reads in C++ at every op.");
  m.def("set_python_state", &magneton::SetPythonState, nb::arg("values"),
        "The settings read in Python (introspected), merged into every later op's runtime state; "
        "ops see a change at their next start.");
  m.def("note_process_group", &magneton::NoteProcessGroupRanks, nb::arg("group_name"), nb::arg("global_ranks"),
        "Notes a process group's global ranks: collectives in it record them as `group_ranks`.");
  m.def("clear_process_groups", &magneton::ClearProcessGroupRanks);
  m.def("set_scope_events", &magneton::SetScopeEvents, nb::arg("prefixes"),
        "Names (prefixes) of schema-less RecordFunction events recorded as scopes, not ops.");
  magneton::RegisterKernelOps(m);
  m.def("ops_recorded", [] { return magneton::g_ops_recorded.load(std::memory_order_relaxed); },
        "Top-level ops this hook recorded since install.");
  magneton::DefineValueFunctions(m);
  m.def(
      "replay_trace",
      [](const std::string& path, int top, std::vector<int64_t> op_ids, double min_round_s, int rounds, bool store,
         bool allow_untrusted) {
        magneton::replay::ReplayTraceOptions o;
        o.allow_untrusted = allow_untrusted;
        o.top = top;
        o.op_ids = std::move(op_ids);
        o.min_round_s = min_round_s;
        o.rounds = rounds;
        o.store = store;
        magneton::StatusOr<std::vector<magneton::replay::ReplayRecord>> records = [&] {
          nb::gil_scoped_release release;
          return magneton::replay::ReplayTrace(path, o);
        }();
        magneton::ThrowIfError(records.status());
        nb::list out;
        for (const auto& r : *records) {
          nb::dict d;
          d["op_id"] = r.op_id;
          d["signature"] = r.signature;
          d["occurrences"] = r.occurrences;
          d["meter"] = r.meter;
          d["provenance"] = r.meter.empty() ? "" : magneton::ProvenanceName(r.provenance);
          d["calls_per_round"] = r.calls_per_round;
          d["duration_ns_mean"] = r.duration_ns_mean;
          d["duration_ns_stddev"] = r.duration_ns_stddev;
          d["energy_uj_mean"] = r.energy_uj_mean;
          d["energy_uj_stddev"] = r.energy_uj_stddev;
          d["error"] = r.error;
          d["device"] = r.device;
          d["method"] = r.method;
          d["online_energy_uj"] = r.online_energy_uj;
          out.append(d);
        }
        return nb::make_tuple(out, magneton::replay::FormatReplayTable(*records));
      },
      nb::arg("path"), nb::arg("top") = 10, nb::arg("op_ids") = std::vector<int64_t>{}, nb::arg("min_round_s") = 0.0,
      nb::arg("rounds") = 5, nb::arg("store") = true, nb::arg("allow_untrusted") = false,
      "Replays recorded ops (regenerated inputs on the op's device) and returns (records, table). min_round_s <= 0: "
      "0.2 s for host ops, 2 s for GPU ops. A trace that does not verify as this user's own is refused unless "
      "allow_untrusted; only side-effect-free ATen ops run (src/replay/replay_policy.h).");
}
