#include "record/xla_profile.h"

#include <algorithm>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include <climits>
#include "record/hlo_text.h"
#include "record/profile_clock.h"
#include "trace/op_args.h"
#include "trace/op_spans.h"

namespace magneton {
namespace {

using nlohmann::json;

constexpr std::string_view kPjit = "PjitFunction(";

void WriteArgs(std::string* out, const XlaThunk& t, const HloOpInfo* info) {
  OpArgsWriter w(out);
  w.BeginParams();
  w.Key("hlo_module");
  w.String(t.module);
  w.Key("hlo_op");
  w.String(t.op);
  if (info) {
    w.Key("opcode");
    w.String(info->opcode);
    if (!info->fusion_kind.empty()) {
      w.Key("fusion_kind");
      w.String(info->fusion_kind);
    }
    w.Key("primitives");
    w.BeginList();
    for (const auto& p : info->primitives) w.String(p);
    w.EndList();
    w.Key("sources");
    w.BeginList();
    for (const auto& s : info->sources) w.String(s);
    w.EndList();
  }
  w.EndParams();
}

// "file:line:function" -> its parts (the file may hold ':').
bool SplitSource(const std::string& s, std::string* file, int64_t* line, std::string* function) {
  const size_t b = s.rfind(':');
  if (b == std::string::npos || b == 0) return false;
  const size_t a = s.rfind(':', b - 1);
  if (a == std::string::npos) return false;
  *file = s.substr(0, a);
  *line = std::strtoll(s.c_str() + a + 1, nullptr, 10);
  *function = s.substr(b + 1);
  return !file->empty() && *line > 0;
}

struct XlaRun {  // the thunks of one execution (run_id) of a module
  std::vector<const XlaThunk*>* thunks;
  int64_t first = 0, last = 0;  // its first thunk's start, its last end (profiler clock)
};

// The run each held call (a jitted call ended at dispatch) executed, by
// dispatch order: XLA runs a device's executions in the order they were
// dispatched, so per HLO module the runs (by start) go to the calls (by
// start) first come first served. A run begins after its call's dispatch
// began; and the recorder reads a call's outputs, waiting for them, before
// the third call after it on its thread begins (jit_call_queue.py), so a
// call whose window passed with no run of its module got none (the profiler
// dropped it) and the queue moves on. Runs paired with no held call
// (inside eager primitives, compile-time runs) are left to the caller.
std::vector<const XlaRun*> PairHeldRuns(const std::vector<Recorder::HeldOp>& held, const std::vector<XlaRun>& runs,
                                        int64_t offset_ns) {
  constexpr int64_t kTolerance = 100'000;
  std::vector<size_t> order(held.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return held[a].event.start_ns < held[b].event.start_ns; });
  std::map<std::string, std::deque<size_t>> queue;
  std::map<int64_t, std::vector<size_t>> by_thread;
  for (size_t i : order) {
    by_thread[held[i].event.thread_id].push_back(i);
    if (!held[i].module.empty()) queue[held[i].module].push_back(i);
  }
  std::vector<int64_t> bound(held.size(), INT64_MAX);
  for (const auto& [_, v] : by_thread) {
    for (size_t k = 0; k + 3 < v.size(); ++k) bound[v[k]] = held[v[k + 3]].event.start_ns;
  }
  std::vector<const XlaRun*> out(held.size(), nullptr);
  for (const XlaRun& r : runs) {
    auto q = queue.find(r.thunks->front()->module);
    if (q == queue.end()) continue;
    const int64_t first = r.first - offset_ns;
    std::deque<size_t>& d = q->second;
    while (!d.empty() && bound[d.front()] < first - kTolerance) d.pop_front();
    if (d.empty() || first < held[d.front()].event.start_ns - kTolerance) continue;
    out[d.front()] = &r;
    d.pop_front();
  }
  return out;
}

// A held call with a run takes the run's span on the op clock: its op is
// XLA's execution, not its dispatch. The call after it is dispatched on the
// same thread while it runs, so these ops go on a lane of their own, the
// dispatching thread's id negated, laid end to end (a device runs one at a
// time), as top-level ops. The held ops' spans as OpSpans (the parents of
// their runs' thunks), by index.
std::vector<OpSpan> RetimeHeld(std::vector<Recorder::HeldOp>& held, const std::vector<const XlaRun*>& run_of,
                               int64_t offset_ns) {
  std::vector<size_t> order;
  for (size_t i = 0; i < held.size(); ++i) {
    if (run_of[i]) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return run_of[a]->first < run_of[b]->first; });
  std::map<int64_t, int64_t> lane_end;
  for (size_t i : order) {
    OpEvent& e = held[i].event;
    const int64_t lane = -std::llabs(e.thread_id);
    auto prev = lane_end.try_emplace(lane, INT64_MIN).first;
    e.start_ns = std::max(run_of[i]->first - offset_ns, prev->second);
    e.end_ns = std::max(run_of[i]->last - offset_ns, e.start_ns);
    prev->second = e.end_ns;
    e.thread_id = lane;
    e.parent_id = kNoId;
  }
  std::vector<OpSpan> spans(held.size());
  for (size_t i = 0; i < held.size(); ++i) {
    const OpEvent& e = held[i].event;
    spans[i] = OpSpan{e.id, held[i].name, e.thread_id, e.start_ns, e.end_ns, e.parent_id, e.scope_id, e.call_path_id};
  }
  return spans;
}

}  // namespace

StatusOr<XlaProfile> ParseXlaProfile(std::string_view json_text) {
  json root = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("the XLA profile is not JSON");
  const json* events = TraceEventsOf(root);
  if (!events) return InvalidArgument("the XLA profile has no traceEvents");
  XlaProfile out;
  for (const json& e : *events) {
    CompleteEvent event;
    if (!AsCompleteEvent(e, &event)) continue;
    const std::string& n = *event.name;
    const json& args = *event.args;
    const bool thunk = args.contains("hlo_op") && args.contains("run_id");
    const bool call = n.size() > kPjit.size() + 1 && n.compare(0, kPjit.size(), kPjit) == 0 && n.back() == ')';
    if (!thunk && !call) continue;
    int64_t start = 0, end = 0, tid = 0;
    if (!CompleteEventSpan(e, &start, &end, &tid)) {
      out.dropped[thunk ? "thunk.no_time" : "call.no_time"]++;
      continue;
    }
    if (thunk) {
      XlaThunk t{TraceEventText(args, "hlo_module"), TraceEventText(args, "hlo_op"), TraceEventText(args, "run_id"),
                 tid, start, end};
      if (t.op.empty() || t.run_id.empty()) {
        out.dropped["thunk.no_op"]++;
        continue;
      }
      out.thunks.push_back(std::move(t));
    } else {
      out.calls.push_back({n.substr(kPjit.size(), n.size() - kPjit.size() - 1), tid, start, end});
    }
  }
  // The profiler stamps each call twice, nested (the Python binding and the
  // C++ call): keep the outermost.
  std::sort(out.calls.begin(), out.calls.end(), [](const XlaHostCall& a, const XlaHostCall& b) {
    return a.thread_id != b.thread_id ? a.thread_id < b.thread_id
                                      : a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<XlaHostCall> outer;
  for (XlaHostCall& c : out.calls) {
    if (!outer.empty() && outer.back().thread_id == c.thread_id && outer.back().function == c.function &&
        c.start_ns >= outer.back().start_ns && c.end_ns <= outer.back().end_ns) {
      continue;
    }
    outer.push_back(std::move(c));
  }
  out.calls = std::move(outer);
  return out;
}

StatusOr<XlaIngestStats> IngestXlaProfile(Recorder& rec, std::string_view json_text,
                                          const std::vector<std::string>& hlo_texts,
                                          const std::vector<XlaReplay>& replays) {
  auto profile = ParseXlaProfile(json_text);
  if (!profile.ok()) return profile.status();
  XlaIngestStats stats;
  stats.host_calls = static_cast<int64_t>(profile->calls.size());
  stats.thunks = static_cast<int64_t>(profile->thunks.size());
  MAGNETON_RETURN_IF_ERROR(rec.Flush());
  auto ops = ReadOpSpans(rec.writer()->path());
  if (!ops.ok()) return ops.status();
  // Jitted calls ended at their dispatch (Recorder::HoldOp): each is given
  // the span of the run XLA executed for it below, and every one is written
  // on the way out, with its dispatch times where no run was found for it.
  std::vector<Recorder::HeldOp> held = rec.TakeHeldOps();
  struct WriteHeld {
    Recorder& rec;
    std::vector<Recorder::HeldOp>& held;
    ~WriteHeld() {
      for (Recorder::HeldOp& h : held) rec.RecordCompletedOp(std::move(h.event), std::move(h.links));
    }
  } write_held{rec, held};

  // The clock: the profiler's calls "PjitFunction(<f>)" are the recorded
  // ops jax::jit(<f>) (an eager primitive's, jax::<f>), paired by their
  // ends: the recorded op runs inside the profiler's call (JAX's Python
  // dispatch, tens to hundreds of µs on a busy machine, comes before it;
  // only the return after it), so the ends agree within µs. The offset that
  // pairs the most ends within 100 µs, refined to their median difference.
  std::map<std::string, std::vector<int64_t>> op_ends, call_ends;
  for (const OpSpan& op : *ops) {
    if (op.name.rfind("jax::", 0) == 0) op_ends[op.name].push_back(op.end_ns);
  }
  for (const Recorder::HeldOp& h : held) op_ends[h.name].push_back(h.dispatched_ns);  // the call's return
  // An eager primitive's op ends after the call returns (and after its
  // output's fingerprint), a jitted call's op before: the jitted calls alone
  // when there are any, not a mix of two biases.
  for (const bool jitted : {true, false}) {
    for (const XlaHostCall& c : profile->calls) {
      const std::string name = jitted ? "jax::jit(" + c.function + ")" : "jax::" + c.function;
      if (op_ends.count(name)) call_ends[name].push_back(c.end_ns);
    }
    if (!call_ends.empty()) break;
  }
  auto paired = PairClockByEnds(call_ends, std::move(op_ends), 100'000);
  if (!paired.ok()) {
    return FailedPrecondition("no jitted call in XLA's profile pairs with a recorded op: its clock is unknown");
  }
  const ProfileClock* clock = &*paired;
  stats.clock_paired = clock->paired;
  stats.clock_offset_ns = clock->offset_ns;
  stats.clock_method = "call_ends";

  std::vector<HloModuleInfo> modules;
  for (const std::string& t : hlo_texts) modules.push_back(ParseHloText(t));
  auto info_of = [&](const XlaThunk& t) -> const HloOpInfo* {
    for (const HloModuleInfo& m : modules) {
      if (m.name != t.module) continue;
      auto it = m.ops.find(t.op);
      if (it != m.ops.end()) return &it->second;
    }
    return nullptr;
  };

  // Recorded ops by start, to find the innermost one holding a run.
  std::vector<const OpSpan*> by_start;
  for (const OpSpan& op : *ops) {
    if (op.name != "magneton::fingerprint") by_start.push_back(&op);  // a value read, never what ran
  }
  std::sort(by_start.begin(), by_start.end(), [](const OpSpan* a, const OpSpan* b) { return a->start_ns < b->start_ns; });
  auto holder = [&](int64_t t) -> const OpSpan* {
    auto it = std::upper_bound(by_start.begin(), by_start.end(), t,
                               [](int64_t v, const OpSpan* o) { return v < o->start_ns; });
    const OpSpan* best = nullptr;
    // Look back over the ops begun before t (nested ops are near).
    for (int k = 0; it != by_start.begin() && k < 64; ++k) {
      --it;
      const OpSpan* o = *it;
      if (o->end_ns >= t && (!best || o->start_ns > best->start_ns)) best = o;
    }
    if (best) return best;
    // Between ops (a run of a few µs in a short op, the clock good to tens
    // of µs): the nearest recorded jax op within 200 µs.
    int64_t best_gap = 200'000;
    for (auto b = std::upper_bound(by_start.begin(), by_start.end(), t,
                                   [](int64_t v, const OpSpan* o) { return v < o->start_ns; }),
              k = b; k != by_start.end() && (*k)->start_ns - t <= best_gap; ++k) {
      if ((*k)->name.rfind("jax::", 0) == 0 && (*k)->start_ns - t < best_gap) best_gap = (*k)->start_ns - t, best = *k;
    }
    it = std::upper_bound(by_start.begin(), by_start.end(), t, [](int64_t v, const OpSpan* o) { return v < o->start_ns; });
    for (int k = 0; it != by_start.begin() && k < 64; ++k) {
      --it;
      const OpSpan* o = *it;
      if (o->name.rfind("jax::", 0) == 0 && o->end_ns < t && t - o->end_ns < best_gap) best_gap = t - o->end_ns, best = o;
    }
    return best;
  };

  // --values: the replayed calls, by their op; the tensors those ops hold.
  // A held call (not written yet) has its tensors in its links; the others
  // are read back from the trace.
  std::map<int64_t, const XlaReplay*> replay_of;
  std::map<int64_t, const Recorder::HeldOp*> held_of;
  for (const Recorder::HeldOp& h : held) held_of.emplace(h.event.id, &h);
  std::vector<int64_t> replay_ops;
  for (const XlaReplay& r : replays) {
    if (replay_of.emplace(r.op_id, &r).second && !held_of.count(r.op_id)) replay_ops.push_back(r.op_id);
  }
  auto call_tensors = ReadCallTensors(rec.writer()->path(), replay_ops);
  if (!call_tensors.ok()) return call_tensors.status();
  for (const auto& [id, replay] : replay_of) {
    auto h = held_of.find(id);
    if (h != held_of.end()) (*call_tensors)[id] = CallTensorsOf(h->second->links);
    if (replay->input_slots.empty()) continue;
    CallTensors& call = (*call_tensors)[id];
    std::vector<int64_t> arguments;
    for (const int64_t slot : replay->input_slots) {
      const bool known = slot >= 0 && static_cast<size_t>(slot) < call.inputs.size();
      arguments.push_back(known ? call.inputs[static_cast<size_t>(slot)] : kNoId);
    }
    call.inputs = std::move(arguments);
  }
  auto module_named = [&](const std::string& name) -> const HloModuleInfo* {
    for (const HloModuleInfo& m : modules) {
      if (m.name == name) return &m;
    }
    return nullptr;
  };

  std::map<std::string, std::vector<const XlaThunk*>> runs;
  for (const XlaThunk& t : profile->thunks) runs[t.module + "#" + t.run_id].push_back(&t);
  stats.runs = static_cast<int64_t>(runs.size());
  std::unordered_map<std::string, int64_t> name_ids, frame_ids;
  std::vector<XlaRun> sorted_runs;
  for (auto& [_, run] : runs) {
    std::sort(run.begin(), run.end(), [](const XlaThunk* a, const XlaThunk* b) { return a->start_ns < b->start_ns; });
    int64_t last = run.front()->end_ns;
    for (const XlaThunk* t : run) last = std::max(last, t->end_ns);
    sorted_runs.push_back({&run, run.front()->start_ns, last});
  }
  std::sort(sorted_runs.begin(), sorted_runs.end(), [](const XlaRun& a, const XlaRun& b) { return a.first < b.first; });
  const std::vector<const XlaRun*> held_run = PairHeldRuns(held, sorted_runs, clock->offset_ns);
  std::vector<OpSpan> held_spans = RetimeHeld(held, held_run, clock->offset_ns);
  std::unordered_map<const std::vector<const XlaThunk*>*, const OpSpan*> run_parent;
  for (size_t i = 0; i < held.size(); ++i) {
    if (held_run[i]) run_parent[held_run[i]->thunks] = &held_spans[i];
  }
  rec.SetMeta("xla.calls_held", std::to_string(held.size()));
  rec.SetMeta("xla.calls_retimed", std::to_string(run_parent.size()));
  for (const XlaRun& r : sorted_runs) {
    const std::vector<const XlaThunk*>& run = *r.thunks;
    const int64_t first = r.first, last = r.last;
    auto found = run_parent.find(r.thunks);
    const OpSpan* parent = found != run_parent.end() ? found->second : holder((first + last) / 2 - clock->offset_ns);
    if (!parent) {
      stats.runs_unlinked++;
      continue;
    }
    if (parent->name.rfind("magneton::", 0) == 0) {
      stats.runs_in_recorder_ops++;
      continue;
    }
    stats.runs_linked++;
    // The run inside its op (the clock mapping is good to tens of µs, the
    // op waited for the whole run), thunks side by side laid one after the
    // other on the op's thread (XLA's worker thread is not kept).
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const XlaThunk* t : run) spans.emplace_back(t->start_ns, t->end_ns);
    const auto placed = LayInside(spans, clock->offset_ns, parent->start_ns, parent->end_ns);
    // Ids in start order, reserved first: the replayed call's values name
    // their producers.
    std::vector<int64_t> op_ids;
    std::vector<std::string> thunk_names;
    for (const XlaThunk* t : run) op_ids.push_back(rec.ReserveOpId()), thunk_names.push_back(t->op);
    std::vector<std::vector<OpTensor>> links(run.size());
    auto replay = replay_of.find(parent->op_id);
    const HloModuleInfo* module = replay != replay_of.end() && replay->second->module == run.front()->module
                                      ? module_named(replay->second->module)
                                      : nullptr;
    if (module) {
      links = XlaValueLinks(rec, *replay->second, *module, (*call_tensors)[parent->op_id], thunk_names, op_ids,
                            &stats.values);
      replay_of.erase(replay);  // the first run under the op (a call runs its executable once)
    }
    for (size_t i = 0; i < run.size(); ++i) {
      const XlaThunk* t = run[i];
      OpEvent op;
      op.id = op_ids[i];
      auto n = name_ids.find(t->op);
      if (n == name_ids.end()) n = name_ids.emplace(t->op, rec.InternString("xla::" + t->op)).first;
      op.name_id = n->second;
      op.thread_id = parent->thread_id;
      op.start_ns = placed[i].first;
      op.end_ns = placed[i].second;
      op.parent_id = parent->op_id;
      op.scope_id = parent->scope_id;
      op.call_path_id = parent->call_path_id;
      const HloOpInfo* info = info_of(*t);
      std::string file, function;
      int64_t line = 0;
      if (info && !info->sources.empty() && SplitSource(info->sources.front(), &file, &line, &function)) {
        auto f = frame_ids.find(info->sources.front());
        if (f == frame_ids.end()) {
          f = frame_ids.emplace(info->sources.front(),
                                rec.InternFrame(rec.InternString(file), line, rec.InternString(function))).first;
        }
        op.call_path_id = rec.InternCallPath(parent->call_path_id, f->second);
        stats.ops_with_source++;
      }
      std::string args;
      WriteArgs(&args, *t, info);
      op.args = std::move(args);
      rec.RecordCompletedOp(std::move(op), std::move(links[i]));
      stats.ops_written++;
    }
  }
  auto set = [&](const char* key, int64_t v) { rec.SetMeta(std::string("xla.") + key, std::to_string(v)); };
  set("host_calls", stats.host_calls);
  set("thunks", stats.thunks);
  set("runs", stats.runs);
  set("runs_linked", stats.runs_linked);
  set("runs_unlinked", stats.runs_unlinked);
  set("runs_in_recorder_ops", stats.runs_in_recorder_ops);
  set("ops", stats.ops_written);
  set("ops_with_source", stats.ops_with_source);
  set("clock_paired", stats.clock_paired);
  set("clock_offset_ns", stats.clock_offset_ns);
  rec.SetMeta("xla.clock_method", stats.clock_method);
  if (!replays.empty()) {
    set("values_calls", stats.values.calls);
    set("values_ops", stats.values.ops_with_values);
    set("values_ops_without", stats.values.ops_without);
    set("values_inputs_linked", stats.values.inputs_linked);
  }
  return stats;
}

}  // namespace magneton
