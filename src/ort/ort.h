// ONNX Runtime ingestion: ORT's own per-node profile (SessionOptions.
// enable_profiling) and the graph as ORT optimised it become Magneton ops,
// tensors and dataflow edges, on the recorder's CLOCK_MONOTONIC op clock.
// The Python glue (python/magneton/recorders/ort_recorder.py) only collects
// the inputs: the profile file, the graph as protobuf JSON, clock readings
// around each run() and value fingerprints. docs/ARCHITECTURE.md ("ONNX
// Runtime") describes the clock mapping and its error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "magneton/recorder.h"
#include "magneton/status.h"

namespace magneton::ort {

struct TypedShape {
  std::string dtype;  // Magneton spelling: "float32", "int64", ...
  std::vector<int64_t> shape;
};

// One "Node" event of the profile: a kernel run of one graph node.
struct NodeEvent {
  std::string node_name;  // the event name without "_kernel_time"
  std::string op_type;    // args.op_name
  std::string provider;   // args.provider, e.g. "CPUExecutionProvider"
  int64_t ts_us = 0;      // microseconds since the session's profiling start
  int64_t dur_us = 0;
  int64_t thread_id = 0;  // the event's tid (the OS thread id on Linux)
  std::vector<TypedShape> inputs, outputs;  // args.input_type_shape / output_type_shape
};

// One "Session" model_run event: one InferenceSession.run().
struct RunEvent {
  int64_t ts_us = 0;
  int64_t dur_us = 0;
};

struct Profile {
  std::vector<NodeEvent> nodes;  // sorted by ts_us
  std::vector<RunEvent> runs;    // sorted by ts_us
};

// Parses a profile (a JSON array of Chrome trace events). Any malformed
// event fails the whole parse with the event's index and what is wrong, so a
// session is ingested completely or not at all.
StatusOr<Profile> ParseProfile(std::string_view json);
StatusOr<Profile> ReadProfile(const std::string& path);

// The ONNX element type number of TensorProto.DataType in Magneton spelling
// ("float32"), or "" for types Magneton does not know.
std::string OnnxElemTypeName(int64_t elem_type);
// ORT's type name in the profile ("float", "int64", "float16") in Magneton
// spelling.
std::string OrtTypeName(std::string_view ort_name);

struct GraphValue {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;  // -1 for a symbolic dimension
};

struct GraphNode {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;  // "" marks an absent optional argument
};

struct Graph {
  std::string name;
  std::vector<GraphNode> nodes;
  std::vector<GraphValue> inputs, outputs, initializers, value_info;
};

// Parses an onnx GraphProto in protobuf's JSON form
// (google.protobuf.json_format.MessageToJson; camelCase or proto field names).
// Initializer data, if present, is ignored: only names, types and dims count.
StatusOr<Graph> ParseGraphJson(std::string_view json);

// Every node output (the values --values fingerprints), in node order.
std::vector<std::string> IntermediateNames(const Graph& graph);

// The op name a node is recorded under: "onnx::Gemm", "com.microsoft::FastGelu".
std::string OpName(std::string_view domain, std::string_view op_type);

// Module-scope path from an exporter node name: "/transformer/h.0/attn/c_attn/Gemm"
// -> {"transformer", "h.0", "attn", "c_attn"}. ORT's fusions append
// "/<FusionName>/" to the name they replace; such a suffix and the op token
// before it are dropped too. Names without '/' (nodes ORT created) give {}.
std::vector<std::string> ScopeFromNodeName(std::string_view node_name);

// Scopes for every node of the graph, by node index: from its name, or, for
// nodes ORT created (fusions named "GPT2Gelu", "SkipLayerNormalization"), the
// deepest scope shared by the nodes that produce its inputs and consume its
// outputs (a fused GELU between h.0/mlp/c_fc and h.0/mlp/c_proj is h.0/mlp).
std::vector<std::vector<std::string>> NodeScopes(const Graph& graph);

// CLOCK_REALTIME - CLOCK_MONOTONIC, from one monotonic read between two
// realtime reads (the tightest of a few tries); uncertainty is half the
// bracket.
struct ClockOffset {
  int64_t realtime_minus_monotonic_ns = 0;
  int64_t uncertainty_ns = 0;
};
ClockOffset MeasureClockOffset();

// One InferenceSession.run() as the Python hook saw it.
struct RunBracket {
  int64_t begin_monotonic_ns = 0, end_monotonic_ns = 0;
  ClockOffset begin, end;  // measured right before and right after run()
  // The run's runtime state (the session's options and this run's
  // RunOptions), stamped on its ops when runs pair with the profile's one to
  // one; kNoId, or unpaired runs: the session's state.
  int64_t state_id = kNoId;
};

// ORT stamps events with std::chrono::high_resolution_clock, which is
// CLOCK_REALTIME with libstdc++: the session's profiling start
// (get_profiling_start_time_ns) plus ts in whole microseconds.
struct SessionClock {
  int64_t profiling_start_realtime_ns = 0;
  ClockOffset created;  // measured right after the session was created
  std::vector<RunBracket> runs;
};

// (run index, value name) -> encoded fingerprint. Run -1: initializers.
using RunValues = std::map<std::pair<int64_t, std::string>, std::string>;

struct IngestStats {
  int64_t ops = 0;
  int64_t tensors = 0;
  int64_t fingerprints = 0;
  int64_t unknown_nodes = 0;   // profile events naming no node of the graph
  int64_t ambiguous_nodes = 0; // profile events naming several nodes of the graph
  // Ops recorded with no tensor link (unknown nodes among them): match and
  // diff cannot place them in the dataflow, so the recorder says how many.
  int64_t ops_without_tensors = 0;
  int64_t runs = 0;
  // "per_run": each run's events are mapped with the offset measured around
  // that run(); "session": the offset measured at creation (run counts of
  // the profile and the hook differ, e.g. run_with_iobinding).
  std::string clock_method;
  int64_t clock_error_ns = 0;  // bound on |mapped - true| of an event's start
  int64_t runs_inside_bracket = 0;  // mapped model_run inside the hook's bracket
  int64_t runs_outside_bracket = 0;
};

// Records one session's profile as ops (one per node event, top level, in
// start order), tensors (per run: graph inputs and node outputs; per
// session: initializers) and fingerprints. Everything is validated before
// the first op is written.
StatusOr<IngestStats> IngestSession(const Graph& graph, const Profile& profile, const SessionClock& clock,
                                    const RunValues& values, Recorder* recorder);

}  // namespace magneton::ort
