// The in-memory event model of one recorded run. The writer persists these
// records; the reader returns them. Every analysis stage reads only this.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/provenance.h"
#include "magneton/shared_dims.h"
#include "magneton/shared_text.h"

namespace magneton {

// Bumped on any incompatible change to the on-disk schema (docs/TRACE_FORMAT.md).
// 3: ops and tensors are compact rows (op_rows, tensor_rows) naming their
// repeated text in dictionaries (op_args, layouts, threads), read back as the
// views ops and tensors; version 2 (those as tables) is still read.
// 2: ops.args is JSON (trace/op_args.h); 1 stored it as unescaped text.
inline constexpr int kTraceSchemaVersion = 3;

inline constexpr int64_t kNoId = -1;

// Ops named "magneton::..." are the recorder's own work written as ops (JAX's
// untimed warm-up run of each new primitive signature): they take their time
// and energy out of the job and out of the gaps around them, and are never
// graph nodes, regions or part of another op's cost.
inline constexpr char kRecorderOpPrefix[] = "magneton::";
inline bool IsRecorderOp(const std::string& name) { return name.rfind(kRecorderOpPrefix, 0) == 0; }
// The recorder op that covers --values fingerprinting (on the traced thread,
// and the fingerprint thread's CPU time on its own): its time and energy are
// the recorder's, not the enclosing op's, and not the job's.
inline constexpr std::string_view kFingerprintOpName = "magneton::fingerprint";

struct RunMetadata {
  std::string label;
  std::string command_line;
  int64_t start_unix_ns = 0;       // wall clock, for humans
  int64_t start_monotonic_ns = 0;  // CLOCK_MONOTONIC, the clock of every event
  std::string host;
  std::string cwd;  // working directory of the traced program (for re-runs)
  std::string engine = "pytorch";  // which recorder wrote the ops
  std::map<std::string, std::string> versions;  // framework -> version
  // Every other meta row ("trust.signature", "python.sys_path", "energy.*"):
  // written with the fields above when the file is created, read back whole.
  std::map<std::string, std::string> extra;
};

// One entry of the config snapshot: a flag, env var, model config field, or
// call argument that could explain a behavioural difference between runs.
struct ConfigEntry {
  std::string key;     // e.g. "torch.backends.mkldnn.enabled", "env.OMP_NUM_THREADS"
  std::string value;   // repr of the value
  std::string source;  // "global_flag", "env", "model_config", "call_arg", "runtime"
};

struct Frame {
  int64_t id = kNoId;
  int64_t file_id = kNoId;      // string id
  int64_t line = 0;
  int64_t function_id = kNoId;  // string id
};

// A Python call path as a linked list from the innermost frame outwards:
// paths that share their outer part share rows.
struct CallPath {
  int64_t id = kNoId;
  int64_t frame_id = kNoId;
  int64_t parent_id = kNoId;  // the caller's path, kNoId at the outermost frame
};

// An nn.Module scope (or an engine's equivalent), as a tree.
struct Scope {
  int64_t id = kNoId;
  int64_t name_id = kNoId;  // the attribute name in the parent, e.g. "h.0"
  int64_t type_id = kNoId;  // the class name, e.g. "GPT2Block"
  int64_t parent_id = kNoId;
  // How the scope's module was constructed, when the recorder saw it
  // (docs/TRACE_FORMAT.md "Scope origins"): the call path of the call that
  // constructed it (its innermost frame is the constructor call's line) and
  // the constructor's arguments as an op-arguments params object
  // ({"find_unused_parameters": true, ...}); kNoId / "" when not seen.
  int64_t init_call_path_id = kNoId;
  std::string init_args;
};

enum class TensorRole : int { kInput = 0, kOutput = 1 };

struct TensorMeta {
  int64_t id = kNoId;
  uint64_t storage_addr = 0;  // base address of the storage; aliases share it
  int64_t storage_offset = 0; // in elements
  // Shared between the tensors of one layout (shared_dims.h).
  SharedDims shape;
  SharedDims strides;  // in elements
  std::string dtype;             // e.g. "float32"
  std::string device;            // e.g. "cpu", "cuda:0"
  int64_t version = 0;           // the in-place version counter when first seen
  int64_t producer_op_id = kNoId;  // kNoId: model input, parameter or constant
};

struct OpTensor {
  int64_t op_id = kNoId;
  TensorRole role = TensorRole::kInput;
  int32_t slot = 0;  // argument position among tensors of that role
  int64_t tensor_id = kNoId;
};

struct OpEvent {
  int64_t id = kNoId;
  int64_t name_id = kNoId;  // string id, e.g. "aten::addmm"
  int64_t thread_id = 0;    // OS thread id
  int64_t start_ns = 0;     // CLOCK_MONOTONIC
  int64_t end_ns = 0;
  int64_t parent_id = kNoId;  // enclosing op on the same thread
  int64_t scope_id = kNoId;
  int64_t call_path_id = kNoId;
  // Links host ops to asynchronous device work (CUPTI / CUDA events) later.
  uint64_t correlation_id = 0;
  // Non-tensor arguments as JSON (docs/TRACE_FORMAT.md, "Op arguments"),
  // shared between the ops of one text (shared_text.h).
  SharedText args;
  // The runtime state in effect when the op started (Trace::runtime_states);
  // kNoId when the recorder reported none.
  int64_t state_id = kNoId;
};

// The settings that select kernels, read by the engine's hook while the run
// goes on (not only at start): thread counts, grad/inference mode, default
// dtype, matmul precision, TF32 and attention-backend enables, deterministic
// mode, autocast, current device. Interned: ops share a state until a value
// changes. Keys are dotted names ("torch.num_threads", "torch.grad_enabled").
struct RuntimeState {
  int64_t id = kNoId;
  std::map<std::string, std::string> values;  // key -> value as text
};

// A call that set a runtime state key (torch.set_num_threads, a `with
// torch.no_grad()` block, sdpa_kernel(...)), where the program made it: the
// line a developer changes.
struct StateSetter {
  std::string key;        // as in RuntimeState::values
  std::string value;      // the value it set
  std::string where;      // "file:line:function" of the user's call
  int64_t t_ns = 0;       // CLOCK_MONOTONIC
  int64_t thread_id = 0;  // OS thread id
};

// Device work launched by an op and timed on the device (GPU kernels, copies
// and fills), on CLOCK_MONOTONIC like every event (the ingest maps the
// device's clock; docs/TRACE_FORMAT.md "Device activities").
struct DeviceActivity {
  uint64_t correlation_id = 0;  // the launching op's correlation_id (0: none)
  std::string device;           // "cuda:0": energy domain gpu-0 measures it
  int64_t stream = 0;
  int64_t name_id = kNoId;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // The recorded op that launched it: the innermost op open on the launching
  // thread at the launch. kNoId: not linked to any recorded op (counted in
  // meta gpu.unlinked).
  int64_t op_id = kNoId;
  std::string kind = "kernel";  // "kernel", "memcpy" or "memset"
  // Run by a CUDA graph launch: the graph and its node that ran it (kNoId:
  // not a graph's, or the source did not say).
  int64_t graph_id = kNoId;
  int64_t graph_node_id = kNoId;
  // The recorded op whose launch, while the graph was being captured,
  // created the node that ran this (docs/TRACE_FORMAT.md "CUDA graphs").
  // kNoId: not a graph's, or its capture was not recorded or not matched.
  int64_t captured_op_id = kNoId;
};

struct EnergySample {
  std::string domain;  // e.g. "cpu-package-0", "gpu-0"
  int64_t t_ns = 0;    // CLOCK_MONOTONIC
  double energy_uj = 0;  // cumulative counter value, unwrapped (NaN if power-only)
  double power_mw = 0;   // instantaneous power (NaN if counter-only)
  Provenance provenance = Provenance::kEstimated;
  std::string meter;   // e.g. "rapl", "nvml", "estimate"
};

struct Trace {
  RunMetadata meta;
  std::vector<ConfigEntry> config;
  std::vector<std::string> strings;  // indexed by string id
  std::vector<Frame> frames;         // indexed by id
  std::vector<CallPath> call_paths;  // indexed by id
  std::vector<Scope> scopes;         // indexed by id
  std::vector<OpEvent> ops;          // indexed by id, in start order
  std::vector<TensorMeta> tensors;   // indexed by id
  std::vector<OpTensor> op_tensors;  // sorted by (op_id, role, slot)
  // Read with ReadOptions::tensors off (trace_reader.h): the tensor rows the
  // file holds, counted, not loaded (`tensors` is then empty); 0 otherwise.
  size_t tensors_not_read = 0;
  std::vector<DeviceActivity> device_activities;
  std::vector<EnergySample> energy_samples;
  std::vector<RuntimeState> runtime_states;  // indexed by id
  std::vector<StateSetter> state_setters;    // in time order

  const std::string& str(int64_t id) const {
    static const std::string kEmpty;
    return id >= 0 && static_cast<size_t>(id) < strings.size() ? strings[id] : kEmpty;
  }
  // "GPT2LMHeadModel/transformer/h.0/attn", or "" for no scope.
  std::string ScopePath(int64_t scope_id) const;
  // Outermost first: {"examples/gpt2.py:12:main", ...}.
  std::vector<std::string> CallPathFrames(int64_t call_path_id) const;
  std::string FrameText(int64_t frame_id) const;
  // The op's tensor links, inputs then outputs, each by slot (op_tensors is
  // sorted by (op_id, role, slot)); empty for an unknown op.
  std::span<const OpTensor> LinksOf(int64_t op_id) const;
};

inline bool IsRecorderOp(const Trace& trace, const OpEvent& op) { return IsRecorderOp(trace.str(op.name_id)); }

}  // namespace magneton
