#include "record/tf_profile.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "record/profile_clock.h"
#include "trace/op_args.h"
#include "trace/op_spans.h"

namespace magneton {
namespace {

using nlohmann::json;

constexpr std::string_view kCall = "EagerLocalExecute: ";
constexpr std::string_view kInference = "__inference_";
constexpr std::string_view kFunctionOp = "tf::function:";
// The recorded op ends after the profiler's call by TF's return to Python
// and the recorder's end of the op: tens of µs, more on a loaded machine.
constexpr int64_t kToleranceNs = 200'000;

bool Integer(const json& args, const char* key, int64_t* out) {
  auto it = args.find(key);
  if (it == args.end()) return false;
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return true;
  }
  if (it->is_string()) {  // some converters write ids as strings
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    *out = std::strtoll(s.c_str(), &end, 10);
    return !s.empty() && end && *end == '\0';
  }
  return false;
}

void WriteArgs(std::string* out, const TfNode& n, const TfCall& call) {
  OpArgsWriter w(out);
  w.BeginParams();
  if (n.xla) {
    w.Key("hlo_module");
    w.String(n.hlo_module);
    w.Key("hlo_op");
    w.String(n.op_type);
  } else {
    w.Key("node");
    w.String(n.node);
  }
  w.Key("graph");
  w.String(call.graph);
  // What TF's profiler gives of a graph node is its name, type and time:
  // said here, so that an op without tensors is not read as one that had none.
  w.Key("tensors");
  w.String("not recorded (graph node)");
  w.EndParams();
}

}  // namespace

std::string TfFunctionName(std::string_view graph) {
  if (graph.substr(0, kInference.size()) != kInference) return {};
  std::string_view rest = graph.substr(kInference.size());
  const size_t u = rest.rfind('_');
  if (u == std::string_view::npos || u == 0 || u + 1 == rest.size()) return {};
  for (char c : rest.substr(u + 1)) {
    if (c < '0' || c > '9') return {};
  }
  return std::string(rest.substr(0, u));
}

StatusOr<TfProfile> ParseTfProfile(std::string_view json_text) {
  json root = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("the TensorFlow profile is not JSON");
  const json* events = TraceEventsOf(root);
  if (!events) return InvalidArgument("the TensorFlow profile has no traceEvents");
  // The converter moves some events' long_name into a shared stackFrames
  // table ("sf": id -> {"name": "MatMul:_MklMatMul"}).
  std::unordered_map<std::string, std::string> frames;
  if (root.is_object()) {
    auto sf = root.find("stackFrames");
    if (sf != root.end() && sf->is_object()) {
      for (auto it = sf->begin(); it != sf->end(); ++it) {
        if (it->is_object()) frames[it.key()] = TraceEventText(*it, "name");
      }
    }
  }
  TfProfile out;
  for (const json& e : *events) {
    CompleteEvent event;
    if (!AsCompleteEvent(e, &event)) continue;
    const std::string& n = *event.name;
    const json& args = *event.args;
    enum { kNone, kCallEvent, kRun, kNode, kXla } kind = kNone;
    int64_t group = 0, eager = 1;
    if (n.compare(0, kCall.size(), kCall) == 0 && n.compare(kCall.size(), kInference.size(), kInference) == 0) {
      kind = kCallEvent;
    } else if (n == "FunctionRun" && Integer(args, "group_id", &group)) {
      kind = kRun;
    } else if (Integer(args, "is_eager", &eager) && eager == 0) {
      kind = kNode;
    } else if (args.contains("hlo_op") && args.contains("hlo_module")) {
      kind = kXla;
    }
    if (kind == kNone) continue;
    int64_t start = 0, end = 0, thread = 0;
    if (!CompleteEventSpan(e, &start, &end, &thread)) {
      out.dropped[kind == kNode || kind == kXla ? "node.no_time" : kind == kRun ? "run.no_time" : "call.no_time"]++;
      continue;
    }
    if (kind == kCallEvent) {
      std::string graph = n.substr(kCall.size());
      std::string function = TfFunctionName(graph);
      if (function.empty()) {
        out.dropped["call.not_a_function"]++;
        continue;
      }
      out.calls.push_back({std::move(graph), std::move(function), thread, start, end});
    } else if (kind == kRun) {
      out.runs.push_back({group, thread, start, end});
    } else if (kind == kXla) {
      TfNode x;
      x.op_type = TraceEventText(args, "hlo_op");
      x.node = x.op_type;
      x.xla = true;
      x.hlo_module = TraceEventText(args, "hlo_module");
      x.thread_id = thread, x.start_ns = start, x.end_ns = end;
      if (x.op_type.empty()) {
        out.dropped["xla.no_op"]++;
        continue;
      }
      out.nodes.push_back(std::move(x));
    } else {
      if (!Integer(args, "group_id", &group)) {
        out.dropped["node.no_group"]++;
        continue;
      }
      std::string long_name = TraceEventText(args, "long_name");
      if (long_name.empty()) {
        auto sf = e.find("sf");
        if (sf != e.end() && (sf->is_number_integer() || sf->is_string())) {
          auto f = frames.find(sf->is_string() ? sf->get<std::string>() : std::to_string(sf->get<int64_t>()));
          if (f != frames.end()) long_name = f->second;
        }
      }
      // "node:OpType"; a node name may hold ':' (never the type).
      const size_t colon = long_name.rfind(':');
      TfNode node;
      node.op_type = n;
      node.node = colon == std::string::npos ? "" : long_name.substr(0, colon);
      node.group_id = group, node.thread_id = thread, node.start_ns = start, node.end_ns = end;
      out.nodes.push_back(std::move(node));
    }
  }
  return out;
}

StatusOr<TfIngestStats> IngestTfProfile(Recorder& rec, std::string_view json_text) {
  auto profile = ParseTfProfile(json_text);
  if (!profile.ok()) return profile.status();
  TfIngestStats stats;
  stats.calls = static_cast<int64_t>(profile->calls.size());
  stats.runs = static_cast<int64_t>(profile->runs.size());
  stats.nodes = static_cast<int64_t>(profile->nodes.size());
  auto set = [&](const char* key, int64_t v) { rec.SetMeta(std::string("tf.profile.") + key, std::to_string(v)); };
  set("calls", stats.calls);
  set("nodes", stats.nodes);
  if (profile->nodes.empty()) return stats;  // no graph ran while profiled: nothing to place
  MAGNETON_RETURN_IF_ERROR(rec.Flush());
  auto ops = ReadOpSpans(rec.writer()->path());
  if (!ops.ok()) return ops.status();

  // The clock: the profiler's "EagerLocalExecute: __inference_<f>_<n>" are
  // the recorded tf::function:<f> ops, paired by their ends (the recorded op
  // began in Python before TF's dispatch; it ends right after the call).
  std::map<std::string, std::vector<int64_t>> op_ends, call_ends;
  std::map<std::string, std::vector<const OpSpan*>> ops_by_name;
  for (const OpSpan& op : *ops) {
    if (op.name.compare(0, kFunctionOp.size(), kFunctionOp) != 0) continue;
    op_ends[op.name].push_back(op.end_ns);
    ops_by_name[op.name].push_back(&op);
  }
  for (const TfCall& c : profile->calls) {
    const std::string name = std::string(kFunctionOp) + c.function;
    if (op_ends.count(name)) call_ends[name].push_back(c.end_ns);
  }
  auto paired = PairClockByEnds(call_ends, op_ends, kToleranceNs);
  if (!paired.ok()) {
    return FailedPrecondition("no tf.function call in TensorFlow's profile pairs with a recorded op: its clock is unknown");
  }
  const ProfileClock clock = *paired;
  stats.clock_paired = clock.paired;
  stats.clock_offset_ns = clock.offset_ns;
  stats.clock_method = "call_ends";

  // Each call's recorded op: the one of its name that overlaps the call
  // most (on the op clock), each op taken once. Not the nearest end alone:
  // the offset pairs the ends to tens of µs overall, but single calls were
  // seen 80-300 µs off (the first call of a jit_compile=True function
  // returns through more of TF after its EagerLocalExecute), while a call
  // and its op overlap by nearly all of the call.
  for (auto& [_, v] : ops_by_name) {
    std::sort(v.begin(), v.end(), [](const OpSpan* a, const OpSpan* b) { return a->end_ns < b->end_ns; });
  }
  std::vector<const OpSpan*> op_of_call(profile->calls.size(), nullptr);
  std::unordered_map<int64_t, bool> taken;
  for (size_t i = 0; i < profile->calls.size(); ++i) {
    const TfCall& c = profile->calls[i];
    auto it = ops_by_name.find(std::string(kFunctionOp) + c.function);
    if (it == ops_by_name.end()) continue;
    const int64_t start = c.start_ns - clock.offset_ns, end = c.end_ns - clock.offset_ns;
    const auto& v = it->second;
    auto pos = std::lower_bound(v.begin(), v.end(), start - kToleranceNs,
                                [](const OpSpan* o, int64_t x) { return o->end_ns < x; });
    const OpSpan* best = nullptr;
    int64_t best_overlap = -kToleranceNs;  // no overlap: the nearest within the tolerance
    for (int k = 0; pos != v.end() && k < 64; ++pos, ++k) {
      const OpSpan* o = *pos;
      if (o->start_ns > end + kToleranceNs && o->end_ns > end + kToleranceNs) break;
      if (taken.count(o->op_id)) continue;
      const int64_t overlap = std::min(o->end_ns, end) - std::max(o->start_ns, start);
      if (overlap > best_overlap) best_overlap = overlap, best = o;
    }
    if (best) {
      taken[best->op_id] = true;
      op_of_call[i] = best;
      stats.calls_linked++;
    }
  }

  // The group of a call: its FunctionRun, on the call's thread inside it
  // (the calls of one thread do not overlap: the latest one begun before
  // the run).
  std::vector<size_t> by_start(profile->calls.size());
  for (size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  auto key = [&](size_t i) { return std::make_pair(profile->calls[i].thread_id, profile->calls[i].start_ns); };
  std::sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  constexpr size_t kNoCall = SIZE_MAX;
  auto call_holding = [&](int64_t thread, int64_t start, int64_t end) {
    auto it = std::upper_bound(by_start.begin(), by_start.end(), std::make_pair(thread, start),
                               [&](const std::pair<int64_t, int64_t>& v, size_t i) { return v < key(i); });
    if (it == by_start.begin()) return kNoCall;
    const TfCall& c = profile->calls[*std::prev(it)];
    return c.thread_id == thread && end <= c.end_ns ? *std::prev(it) : kNoCall;
  };
  std::unordered_map<int64_t, size_t> call_of_group;
  for (const TfFunctionRun& r : profile->runs) {
    const size_t c = call_holding(r.thread_id, r.start_ns, r.end_ns);
    if (c != kNoCall) call_of_group.emplace(r.group_id, c);
  }

  // Each call's nodes: the executor's by group, XLA's thunks by where they ran.
  std::map<size_t, std::vector<const TfNode*>> by_call;
  for (const TfNode& n : profile->nodes) {
    size_t c = kNoCall;
    if (n.xla) {
      c = call_holding(n.thread_id, n.start_ns, n.end_ns);
    } else if (auto g = call_of_group.find(n.group_id); g != call_of_group.end()) {
      c = g->second;
    }
    if (c == kNoCall || !op_of_call[c]) {
      stats.nodes_unlinked++;
      continue;
    }
    by_call[c].push_back(&n);
  }
  std::unordered_map<std::string, int64_t> name_ids;
  for (auto& [call_index, nodes] : by_call) {
    const OpSpan* parent = op_of_call[call_index];
    const TfCall& call = profile->calls[call_index];
    std::sort(nodes.begin(), nodes.end(), [](const TfNode* a, const TfNode* b) { return a->start_ns < b->start_ns; });
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const TfNode* n : nodes) spans.emplace_back(n->start_ns, n->end_ns);
    const auto placed = LayInside(spans, clock.offset_ns, parent->start_ns, parent->end_ns);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const TfNode* n = nodes[i];
      OpEvent op;
      op.id = rec.ReserveOpId();
      const std::string name = (n->xla ? "xla::" : "tf::") + n->op_type;
      auto id = name_ids.find(name);
      if (id == name_ids.end()) id = name_ids.emplace(name, rec.InternString(name)).first;
      op.name_id = id->second;
      op.thread_id = parent->thread_id;  // nested in its call: TF's executor thread is not kept
      op.start_ns = placed[i].first;
      op.end_ns = placed[i].second;
      op.parent_id = parent->op_id;
      op.scope_id = parent->scope_id;
      op.call_path_id = parent->call_path_id;
      op.state_id = parent->state_id;
      std::string args;
      WriteArgs(&args, *n, call);
      op.args = std::move(args);
      rec.RecordCompletedOp(std::move(op), {});
      stats.nodes_written++;
    }
  }
  set("runs", stats.runs);
  set("calls_linked", stats.calls_linked);
  set("ops", stats.nodes_written);
  set("nodes_unlinked", stats.nodes_unlinked);
  set("nodes_without_tensors", stats.nodes_written);
  set("clock_paired", stats.clock_paired);
  set("clock_offset_ns", stats.clock_offset_ns);
  rec.SetMeta("tf.profile.clock_method", stats.clock_method);
  return stats;
}

}  // namespace magneton
