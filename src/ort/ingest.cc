// One ORT session's profile + optimised graph -> ops, tensors, edges.
#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "ort/ort.h"
#include "trace/op_args.h"

namespace magneton::ort {
namespace {

constexpr int64_t kUsTruncationNs = 1000;  // ts and dur are whole microseconds

// Which offset maps a run's events, and how far off a mapped time can be.
struct RunMapping {
  int64_t offset_ns = 0;  // realtime - monotonic
  int64_t error_ns = 0;
};

struct PlannedTensor {
  TensorMeta meta;
  std::string value_name;  // for its fingerprint
  int64_t run = 0;         // -1: an initializer
};

struct PlannedOp {
  OpEvent op;
  std::vector<std::pair<OpTensor, int64_t>> links;  // link, planned tensor index
  std::vector<std::string> scope;
};

std::vector<int64_t> Dims(const GraphValue* v) { return v ? v->shape : std::vector<int64_t>{}; }

}  // namespace

StatusOr<IngestStats> IngestSession(const Graph& graph, const Profile& profile, const SessionClock& clock,
                                    const RunValues& values, Recorder* rec) {
  if (rec == nullptr) return FailedPrecondition("no recording is active");
  IngestStats stats;
  stats.runs = static_cast<int64_t>(profile.runs.size());

  // --- clock: per run when the hook saw as many run() calls as the profile has.
  std::vector<RunMapping> mappings;
  bool per_run = !profile.runs.empty() && profile.runs.size() == clock.runs.size();
  // Concurrent run() calls (threads) cannot be paired with model_run events
  // by order; neither can a run() that raised before its end was read.
  for (size_t k = 0; per_run && k < clock.runs.size(); ++k) {
    if (clock.runs[k].end_monotonic_ns == 0 ||
        (k > 0 && clock.runs[k].begin_monotonic_ns < clock.runs[k - 1].end_monotonic_ns))
      per_run = false;
  }
  stats.clock_method = per_run ? "per_run" : "session";
  RunMapping session_mapping{clock.created.realtime_minus_monotonic_ns,
                             clock.created.uncertainty_ns + kUsTruncationNs};
  for (size_t k = 0; k < profile.runs.size(); ++k) {
    if (!per_run) {
      mappings.push_back(session_mapping);
      continue;
    }
    const RunBracket& b = clock.runs[k];
    int64_t drift = std::abs(b.end.realtime_minus_monotonic_ns - b.begin.realtime_minus_monotonic_ns);
    RunMapping m;
    m.offset_ns = b.begin.realtime_minus_monotonic_ns + (b.end.realtime_minus_monotonic_ns -
                                                          b.begin.realtime_minus_monotonic_ns) / 2;
    m.error_ns = std::max(b.begin.uncertainty_ns, b.end.uncertainty_ns) + (drift + 1) / 2 + kUsTruncationNs;
    mappings.push_back(m);
    // Check: the run as ORT timed it must lie inside the hook's bracket.
    int64_t start = clock.profiling_start_realtime_ns + profile.runs[k].ts_us * 1000 - m.offset_ns;
    int64_t end = start + profile.runs[k].dur_us * 1000;
    bool inside = start >= b.begin_monotonic_ns - m.error_ns && end <= b.end_monotonic_ns + m.error_ns + kUsTruncationNs;
    (inside ? stats.runs_inside_bracket : stats.runs_outside_bracket)++;
  }
  for (const RunMapping& m : mappings) stats.clock_error_ns = std::max(stats.clock_error_ns, m.error_ns);
  if (mappings.empty()) stats.clock_error_ns = session_mapping.error_ns;

  // The run holding an event: the last model_run starting at or before it.
  auto run_of = [&](int64_t ts_us) -> int64_t {
    auto it = std::upper_bound(profile.runs.begin(), profile.runs.end(), ts_us,
                               [](int64_t t, const RunEvent& r) { return t < r.ts_us; });
    return it == profile.runs.begin() ? -2 : static_cast<int64_t>(it - profile.runs.begin()) - 1;
  };
  auto to_monotonic = [&](int64_t run, int64_t ts_us) {
    const RunMapping& m = run >= 0 ? mappings[run] : session_mapping;
    return clock.profiling_start_realtime_ns + ts_us * 1000 - m.offset_ns;
  };

  // --- graph indices.
  // A name held by several nodes (the recorder renames repeats, but a graph
  // can come from elsewhere) names none: linking its events to the first
  // node's tensors would invent dataflow.
  constexpr size_t kAmbiguous = static_cast<size_t>(-1);
  std::unordered_map<std::string_view, size_t> node_by_name;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    auto [it, inserted] = node_by_name.emplace(graph.nodes[i].name, i);
    if (!inserted) it->second = kAmbiguous;
  }
  std::vector<std::vector<std::string>> node_scopes = NodeScopes(graph);
  std::unordered_map<std::string_view, const GraphValue*> initializer, graph_input, value_info;
  for (const GraphValue& v : graph.initializers) initializer.emplace(v.name, &v);
  for (const GraphValue& v : graph.inputs) graph_input.emplace(v.name, &v);
  for (const GraphValue& v : graph.value_info) value_info.emplace(v.name, &v);
  for (const GraphValue& v : graph.outputs) value_info.emplace(v.name, &v);

  // --- plan everything (no writes yet), then write.
  std::vector<PlannedTensor> tensors;
  std::vector<PlannedOp> ops;
  std::unordered_map<std::string, int64_t> session_tensors;  // initializers
  std::unordered_map<std::string, int64_t> run_tensors;      // this run's values
  int64_t current_run = -3;
  auto new_tensor = [&](const std::string& name, const TypedShape* seen, const GraphValue* declared, int64_t run,
                        int64_t producer) {
    PlannedTensor t;
    t.value_name = name;
    t.run = run;
    t.meta.dtype = seen && !seen->dtype.empty() ? seen->dtype : (declared ? declared->dtype : std::string());
    t.meta.shape = seen ? seen->shape : Dims(declared);
    t.meta.device = "cpu";
    t.meta.producer_op_id = producer;  // an index into `ops` until written
    tensors.push_back(std::move(t));
    return static_cast<int64_t>(tensors.size()) - 1;
  };

  for (const NodeEvent& ev : profile.nodes) {
    int64_t run = run_of(ev.ts_us);
    if (run != current_run) {
      run_tensors.clear();  // every run() computes fresh values
      current_run = run;
    }
    PlannedOp p;
    auto node_it = node_by_name.find(ev.node_name);
    bool ambiguous = node_it != node_by_name.end() && node_it->second == kAmbiguous;
    const GraphNode* node =
        node_it == node_by_name.end() || ambiguous ? nullptr : &graph.nodes[node_it->second];
    p.op.name_id = rec->InternString(node ? OpName(node->domain, node->op_type) : OpName("", ev.op_type));
    p.op.thread_id = ev.thread_id;
    p.op.start_ns = to_monotonic(run, ev.ts_us);
    if (per_run && run >= 0) p.op.state_id = clock.runs[run].state_id;  // kNoId: the session's
    p.op.end_ns = p.op.start_ns + ev.dur_us * 1000;
    std::string args_text;
    {
      OpArgsWriter args(&args_text);  // {"node": ..., "ep": ...} (docs/TRACE_FORMAT.md)
      args.BeginParams();
      args.Key("node");
      args.String(ev.node_name);
      if (!ev.provider.empty()) {
        args.Key("ep");
        args.String(ev.provider);
      }
      args.EndParams();
    }
    p.op.args = std::move(args_text);
    p.scope = node ? node_scopes[node_it->second] : ScopeFromNodeName(ev.node_name);
    int64_t op_index = static_cast<int64_t>(ops.size());
    if (!node) {
      (ambiguous ? stats.ambiguous_nodes : stats.unknown_nodes)++;
      ops.push_back(std::move(p));
      continue;
    }
    // The profile leaves out inputs a kernel pre-packed (Gemm/MatMul weights),
    // so its shapes line up with the node's slots only when none is missing.
    bool inputs_aligned = ev.inputs.size() == node->inputs.size();
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const std::string& name = node->inputs[i];
      if (name.empty()) continue;
      const TypedShape* seen = inputs_aligned ? &ev.inputs[i] : nullptr;
      int64_t t;
      if (auto it = run_tensors.find(name); it != run_tensors.end()) {
        t = it->second;
      } else if (auto init = initializer.find(name); init != initializer.end()) {
        auto [s, inserted] = session_tensors.try_emplace(name, 0);
        if (inserted) s->second = new_tensor(name, nullptr, init->second, -1, kNoId);
        t = s->second;
      } else {
        // A graph input, or the output of a node the profile does not show.
        auto in = graph_input.find(name);
        auto vi = value_info.find(name);
        t = new_tensor(name, seen, in != graph_input.end() ? in->second : (vi != value_info.end() ? vi->second : nullptr),
                       run, kNoId);
        run_tensors[name] = t;
      }
      p.links.push_back({{kNoId, TensorRole::kInput, static_cast<int32_t>(i), kNoId}, t});
    }
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const std::string& name = node->outputs[i];
      if (name.empty()) continue;
      const TypedShape* seen = ev.outputs.size() == node->outputs.size() ? &ev.outputs[i] : nullptr;
      auto vi = value_info.find(name);
      int64_t t = new_tensor(name, seen, vi != value_info.end() ? vi->second : nullptr, run, op_index);
      run_tensors[name] = t;
      p.links.push_back({{kNoId, TensorRole::kOutput, static_cast<int32_t>(i), kNoId}, t});
    }
    ops.push_back(std::move(p));
  }

  // --- write: op ids in start order, then tensors (producers resolved), then ops.
  std::vector<int64_t> op_ids(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) op_ids[i] = rec->ReserveOpId();
  std::vector<int64_t> tensor_ids(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    PlannedTensor& t = tensors[i];
    if (t.meta.producer_op_id != kNoId) t.meta.producer_op_id = op_ids[t.meta.producer_op_id];
    tensor_ids[i] = rec->AddTensor(t.meta);
    auto fp = values.find({t.run, t.value_name});
    if (fp != values.end()) {
      rec->AddFingerprint(tensor_ids[i], fp->second);
      stats.fingerprints++;
    }
  }
  stats.tensors = static_cast<int64_t>(tensors.size());
  int64_t root = rec->InternScope(kNoId, graph.name.empty() ? "onnx_graph" : graph.name, "onnx.GraphProto");
  for (size_t i = 0; i < ops.size(); ++i) {
    PlannedOp& p = ops[i];
    if (p.links.empty()) stats.ops_without_tensors++;
    int64_t scope = root;
    for (const std::string& part : p.scope) scope = rec->InternScope(scope, part, "");
    p.op.id = op_ids[i];
    p.op.scope_id = scope;
    std::vector<OpTensor> links;
    links.reserve(p.links.size());
    for (auto& [link, t] : p.links) {
      link.tensor_id = tensor_ids[t];
      links.push_back(link);
    }
    rec->RecordCompletedOp(std::move(p.op), std::move(links));
  }
  stats.ops = static_cast<int64_t>(ops.size());
  return stats;
}

}  // namespace magneton::ort
