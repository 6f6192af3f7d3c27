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

#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "magneton/recorder.h"
#include "pyhooks/python_stack.h"
#include "torch_hook/replay_trace.h"

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

// "float32" etc. for every ScalarType, computed once.
const std::string& DtypeName(c10::ScalarType t) {
  static const auto* names = [] {
    auto* arr = new std::array<std::string, static_cast<size_t>(c10::ScalarType::NumOptions)>();
    for (size_t i = 0; i < arr->size(); ++i) {
      auto st = static_cast<c10::ScalarType>(i);
      try {
        (*arr)[i] = c10::getDtypeNames(st).first;
      } catch (...) {
        (*arr)[i] = c10::toString(st);
      }
      if ((*arr)[i].empty()) (*arr)[i] = c10::toString(st);
    }
    return arr;
  }();
  size_t idx = static_cast<size_t>(t);
  static const std::string kUnknown = "unknown";
  return idx < names->size() ? (*names)[idx] : kUnknown;
}

struct NameCacheEntry {
  std::string text;
  uint64_t generation;
  int64_t id;
};

// Interned "aten::add.Tensor" for a RecordFunction. Keyed by the name
// pointer (stable for schema-backed ops) and confirmed by content, since
// string-backed names (backward functions) live in per-call storage.
int64_t OpNameId(Recorder& rec, const at::RecordFunction& fn) {
  thread_local std::unordered_map<const char*, NameCacheEntry> cache;
  const char* name = fn.name();
  auto it = cache.find(name);
  if (it != cache.end() && it->second.generation == rec.generation() && it->second.text == name) {
    return it->second.id;
  }
  std::string full = name;
  if (auto op = fn.operator_name(); op && !op->overload_name.empty()) full += "." + op->overload_name;
  int64_t id = rec.InternString(full);
  cache[name] = {name, rec.generation(), id};
  return id;
}

std::string_view DeviceName(const c10::Device& d) {
  if (d.is_cpu()) return "cpu";
  thread_local std::unordered_map<int, std::string> names;
  int key = static_cast<int>(d.type()) * 1024 + d.index();
  auto it = names.find(key);
  if (it == names.end()) it = names.emplace(key, d.str()).first;
  return it->second;
}

// Whether the op's outputs alias its inputs without writing them (schema
// returns all "Tensor(a)", no "!"): a view op, whose output values are the
// input's. Cached like OpNameId.
bool IsViewOp(const at::RecordFunction& fn) {
  struct Entry {
    std::string text;
    bool view;
  };
  thread_local std::unordered_map<const char*, Entry> cache;
  const char* name = fn.name();
  auto it = cache.find(name);
  if (it != cache.end() && it->second.text == name) return it->second.view;
  bool view = false;
  if (auto op = fn.operator_name()) {
    if (auto handle = c10::Dispatcher::singleton().findSchema(*op)) {
      const auto& returns = handle->schema().returns();
      view = !returns.empty();
      for (const auto& r : returns) {
        const auto* alias = r.alias_info();
        view = view && alias != nullptr && !alias->isWrite();
      }
    }
  }
  cache[name] = {name, view};
  return view;
}

// Arguments an op only writes: out= arguments, and self of the in-place ops
// that overwrite it without reading it (copy_, fill_, zero_, the random
// fills). Their old value is not an input: recording it would link the op to
// whatever earlier value had the same address, layout and version (a freed
// result of the previous iteration that the allocator handed out again).
// Cached like IsViewOp; indexed by argument position.
const std::vector<bool>& WriteOnlyArgs(const at::RecordFunction& fn) {
  struct Entry {
    std::string text;
    std::vector<bool> write_only;
  };
  thread_local std::unordered_map<const char*, Entry> cache;
  const char* name = fn.name();
  auto it = cache.find(name);
  if (it != cache.end() && it->second.text == name) return it->second.write_only;
  static const std::unordered_set<std::string_view> kOverwrite = {
      "aten::copy_",    "aten::fill_",     "aten::zero_",     "aten::normal_",      "aten::uniform_",
      "aten::random_",  "aten::bernoulli_", "aten::exponential_", "aten::geometric_", "aten::cauchy_",
      "aten::log_normal_"};
  std::vector<bool> write_only;
  if (auto op = fn.operator_name()) {
    if (auto handle = c10::Dispatcher::singleton().findSchema(*op)) {
      const auto& arguments = handle->schema().arguments();
      write_only.resize(arguments.size(), false);
      for (size_t i = 0; i < arguments.size(); ++i) write_only[i] = arguments[i].is_out();
      if (!write_only.empty() && kOverwrite.count(std::string_view(name))) write_only[0] = true;
    }
  }
  auto& entry = cache[name];
  entry = {name, std::move(write_only)};
  return entry.write_only;
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
    v.storage_offset = t.storage_offset();
  } else {
    v.storage_addr = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
  }
  v.version_tracked = !t.is_inference();
  v.version = v.version_tracked ? static_cast<int64_t>(t._version()) : 0;
  if (initialized && rec.record_values() && t.device().is_cpu() && t.layout() == c10::kStrided && t.has_storage() &&
      !t.is_nested() && t.storage().data() != nullptr) {
    v.host_data = t.data_ptr();
  }
  if (output) {
    rec.AddOutput(slot, v);
  } else if (overwritten) {
    rec.AddOverwrittenInput(slot, v);
  } else {
    rec.AddInput(slot, v);
  }
}

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, res.ptr);
}

// Appends a compact text of a non-tensor argument; tensors become "%".
// overwritten: a write-only argument (WriteOnlyArgs), linked for its slot as
// a new value of this op's (Recorder::AddOverwrittenInput), not fingerprinted.
void VisitValue(Recorder& rec, bool output, int32_t& slot, const c10::IValue& iv, std::string* args,
                bool is_view = false, bool initialized = true, bool overwritten = false) {
  if (iv.isTensor()) {
    const at::Tensor& t = iv.toTensor();
    if (t.defined()) AddTensor(rec, output, slot, t, is_view, initialized && !overwritten, overwritten);
    ++slot;
    if (args) args->append(t.defined() ? "%" : "None");
  } else if (iv.isList() || iv.isTuple()) {
    if (args) args->push_back('[');
    bool first = true;
    auto visit = [&](const c10::IValue& e) {
      if (args && !first) args->push_back(',');
      first = false;
      VisitValue(rec, output, slot, e, args, is_view, initialized, overwritten);
    };
    if (iv.isList()) {
      for (const c10::IValue& e : iv.toListRef()) visit(e);
    } else {
      for (const c10::IValue& e : iv.toTupleRef().elements()) visit(e);
    }
    if (args) args->push_back(']');
  } else if (!args) {
    return;
  } else if (iv.isInt()) {
    AppendInt(*args, iv.toInt());
  } else if (iv.isBool()) {
    args->append(iv.toBool() ? "True" : "False");
  } else if (iv.isDouble()) {
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof(buf), iv.toDouble());
    args->append(buf, res.ptr);
  } else if (iv.isNone()) {
    args->append("None");
  } else if (iv.isString()) {
    args->push_back('\'');
    args->append(iv.toStringRef());
    args->push_back('\'');
  } else if (iv.isDevice()) {
    args->append(iv.toDevice().str());
  } else if (iv.isScalar()) {
    args->append(iv.toScalar().isFloatingPoint() ? std::to_string(iv.toScalar().toDouble())
                                                   : std::to_string(iv.toScalar().toLong()));
  } else {
    args->append(iv.tagKind());
  }
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
  if (!rec) return nullptr;
  int64_t name_id = OpNameId(*rec, fn);
  // Only the outermost op of a thread walks Python; nested ops inherit.
  PythonContext py{kNoId, kNoId};
  const bool top_level = rec->OpDepth() == 0;
  if (top_level) py = CurrentPythonContext(*rec);
  rec->BeginOp(name_id, py.call_path_id, py.scope_id, fn.handle());
  if (top_level) g_ops_recorded.fetch_add(1, std::memory_order_relaxed);
  auto ctx = std::make_unique<OpContext>();
  ctx->generation = rec->generation();
  int32_t slot = 0;
  ctx->args.reserve(32);
  bool first = true;
  const std::vector<bool>& write_only = WriteOnlyArgs(fn);
  size_t position = 0;
  for (const c10::IValue& iv : fn.inputs()) {
    if (!first) ctx->args.push_back(',');
    first = false;
    const bool overwritten = position < write_only.size() && write_only[position];
    VisitValue(*rec, /*output=*/false, slot, iv, &ctx->args, false, true, overwritten);
    ++position;
  }
  return ctx;
}

void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext* raw) {
  auto* ctx = static_cast<OpContext*>(raw);
  Recorder::Ref rec;
  // A recording stopped (or restarted) between start and end: drop the op.
  // Generations are unique per Start, so a new session at the old address
  // cannot pass for the old one.
  if (!ctx || !rec || rec->generation() != ctx->generation) return;
  int32_t slot = 0;
  const bool is_view = IsViewOp(fn);
  const bool initialized = !std::string_view(fn.name()).starts_with("aten::empty");
  for (const c10::IValue& iv : fn.outputs()) {
    VisitValue(*rec, /*output=*/true, slot, iv, nullptr, is_view, initialized);
  }
  rec->EndOp(std::move(ctx->args));
}

void Install() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_handle) return;
  g_ops_recorded.store(0, std::memory_order_relaxed);
  g_handle = at::addGlobalCallback(at::RecordFunctionCallback(&OnOpStart, &OnOpEnd)
                                       .needsInputs(true)
                                       .needsOutputs(true)
                                       .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

void Uninstall() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (!g_handle) return;
  at::removeCallback(*g_handle);
  g_handle.reset();
}

}  // namespace
}  // namespace magneton

NB_MODULE(_torch_hook, m) {
  m.doc() = "Magneton's PyTorch RecordFunction hook (built against the installed torch)";
  m.def("install", &magneton::Install, nb::call_guard<nb::gil_scoped_release>(),
        "Start forwarding every ATen op to the active recording.");
  m.def("uninstall", &magneton::Uninstall, nb::call_guard<nb::gil_scoped_release>());
  m.def("is_installed", [] {
    std::lock_guard<std::mutex> lock(magneton::g_install_mu);
    return magneton::g_handle.has_value();
  });
  m.attr("TORCH_VERSION_BUILT") = MAGNETON_TORCH_VERSION;
  m.def("ops_recorded", [] { return magneton::g_ops_recorded.load(std::memory_order_relaxed); },
        "Top-level ops this hook recorded since install.");
  m.def(
      "replay_trace",
      [](const std::string& path, int top, std::vector<int64_t> op_ids, double min_round_s, int rounds, bool store) {
        magneton::replay::ReplayTraceOptions o;
        o.top = top;
        o.op_ids = std::move(op_ids);
        o.min_round_s = min_round_s;
        o.rounds = rounds;
        o.store = store;
        magneton::StatusOr<std::vector<magneton::replay::ReplayRecord>> records = [&] {
          nb::gil_scoped_release release;
          return magneton::replay::ReplayTrace(path, o);
        }();
        if (!records.ok()) throw std::runtime_error(records.status().message());
        nb::list out;
        for (const auto& r : *records) {
          nb::dict d;
          d["op_id"] = r.op_id;
          d["signature"] = r.signature;
          d["occurrences"] = r.occurrences;
          d["meter"] = r.meter;
          d["provenance"] = r.meter.empty() ? "" : (r.provenance == magneton::Provenance::kMeasured ? "measured" : "estimated");
          d["calls_per_round"] = r.calls_per_round;
          d["duration_ns_mean"] = r.duration_ns_mean;
          d["duration_ns_stddev"] = r.duration_ns_stddev;
          d["energy_uj_mean"] = r.energy_uj_mean;
          d["energy_uj_stddev"] = r.energy_uj_stddev;
          d["error"] = r.error;
          out.append(d);
        }
        return nb::make_tuple(out, magneton::replay::FormatReplayTable(*records));
      },
      nb::arg("path"), nb::arg("top") = 10, nb::arg("op_ids") = std::vector<int64_t>{}, nb::arg("min_round_s") = 0.2,
      nb::arg("rounds") = 5, nb::arg("store") = true,
      "Replays recorded ops (regenerated inputs) and returns (records, table).");
}
