// The runtime state in effect for a region's ops on both sides (issue 13):
// a thread count or a precision flag set while the program runs explains the
// ops that ran under it, which a start-up config snapshot cannot say.
#include <algorithm>
#include <map>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

constexpr const char* kAbsent = "<absent>";

bool ValidOp(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.ops.size(); }

struct InEffect {
  const RuntimeState* state = nullptr;
  int ops = 0;
  int64_t first_start_ns = 0;  // the earliest region op under it
  int64_t thread_id = 0;
};

// The state under which the region's ops spent the most time.
InEffect StateInEffect(const Trace& t, const std::vector<int64_t>& ops) {
  std::map<int64_t, std::pair<int64_t, int>> time_by_state;  // state id -> (ns, ops)
  InEffect out;
  for (int64_t id : ops) {
    if (!ValidOp(t, id)) continue;
    const OpEvent& op = t.ops[id];
    if (op.state_id < 0 || static_cast<size_t>(op.state_id) >= t.runtime_states.size()) continue;
    auto& [ns, n] = time_by_state[op.state_id];
    ns += op.end_ns - op.start_ns + 1;  // +1: zero-length ops still count
    ++n;
  }
  int64_t best_ns = -1;
  for (const auto& [state, cost] : time_by_state) {
    if (cost.first > best_ns) {
      best_ns = cost.first;
      out.state = &t.runtime_states[state];
      out.ops = cost.second;
    }
  }
  if (!out.state) return out;
  bool first = true;
  for (int64_t id : ops) {
    if (!ValidOp(t, id) || t.ops[id].state_id != out.state->id) continue;
    if (first || t.ops[id].start_ns < out.first_start_ns) {
      out.first_start_ns = t.ops[id].start_ns;
      out.thread_id = t.ops[id].thread_id;
      first = false;
    }
  }
  return out;
}

// A key of a framework ("jax.", "torch.") the other side's state never has.
bool OtherSideLacksFramework(const std::string& key, const RuntimeState& other) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos) return false;
  const std::string prefix = key.substr(0, dot + 1);
  auto it = other.values.lower_bound(prefix);
  return it == other.values.end() || it->first.rfind(prefix, 0) != 0;
}

// The last call that set `key` to `value` before the region's first op ran,
// preferring the region's thread (a setter on another thread may not reach it).
const StateSetter* SetterOf(const Trace& t, const std::string& key, const std::string& value, const InEffect& in) {
  const StateSetter* any = nullptr;
  const StateSetter* same_thread = nullptr;
  for (const StateSetter& s : t.state_setters) {
    if (s.key != key || s.value != value || s.t_ns > in.first_start_ns) continue;
    any = &s;
    if (s.thread_id == in.thread_id) same_thread = &s;
  }
  return same_thread ? same_thread : any;
}

// The ops of the two sides that do the same work: ops of one name paired in
// start order (the k-th with the k-th). Only a setting that differs for the
// same work can make it cost more; ops only one side runs (extra work) say
// nothing about it, and comparing the state they ran under with the other
// side's would blame whatever differs between the two programs' phases
// (weights made with grad on beside a no_grad loop).
void PairedOps(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b, const std::vector<int64_t>& ops_b,
               std::vector<int64_t>* paired_a, std::vector<int64_t>* paired_b) {
  auto by_start = [](const Trace& t, std::vector<int64_t> ops) {
    ops.erase(std::remove_if(ops.begin(), ops.end(), [&](int64_t id) { return !ValidOp(t, id); }), ops.end());
    std::stable_sort(ops.begin(), ops.end(),
                     [&](int64_t x, int64_t y) { return t.ops[x].start_ns < t.ops[y].start_ns; });
    return ops;
  };
  const std::vector<int64_t> sorted_a = by_start(a, ops_a), sorted_b = by_start(b, ops_b);
  std::map<std::string, std::vector<int64_t>> b_by_name;
  for (int64_t id : sorted_b) b_by_name[b.str(b.ops[id].name_id)].push_back(id);
  std::map<std::string, size_t> used;
  for (int64_t id : sorted_a) {
    const std::string& name = a.str(a.ops[id].name_id);
    auto it = b_by_name.find(name);
    if (it == b_by_name.end()) continue;
    size_t& k = used[name];
    if (k >= it->second.size()) continue;
    paired_a->push_back(id);
    paired_b->push_back(it->second[k++]);
  }
}

}  // namespace

std::vector<StateDifference> DiffRuntimeStates(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                                               const std::vector<int64_t>& ops_b, char costly_side) {
  std::vector<StateDifference> out;
  std::vector<int64_t> paired_a, paired_b;
  PairedOps(a, ops_a, b, ops_b, &paired_a, &paired_b);
  const InEffect ia = StateInEffect(a, paired_a), ib = StateInEffect(b, paired_b);
  if (!ia.state || !ib.state) return out;
  std::map<std::string, std::pair<std::string, std::string>> values;
  for (const auto& [k, v] : ia.state->values) {
    if (!ib.state->values.count(k) && OtherSideLacksFramework(k, *ib.state)) continue;
    values[k] = {v, kAbsent};
  }
  for (const auto& [k, v] : ib.state->values) {
    auto it = values.find(k);
    if (it != values.end()) {
      it->second.second = v;
    } else if (ia.state->values.count(k) || !OtherSideLacksFramework(k, *ia.state)) {
      values[k] = {kAbsent, v};
    }
  }
  for (const auto& [key, v] : values) {
    if (v.first == v.second) continue;
    StateDifference d;
    d.key = key;
    d.value_a = v.first;
    d.value_b = v.second;
    d.ops_a = ia.ops;
    d.ops_b = ib.ops;
    // The line to change is the costly side's setter; without one (a default),
    // the cheaper side's shows the call to add.
    const bool a_costly = costly_side != 'B';
    const StateSetter* s = a_costly ? SetterOf(a, key, v.first, ia) : SetterOf(b, key, v.second, ib);
    char side = a_costly ? 'A' : 'B';
    if (!s) {
      s = a_costly ? SetterOf(b, key, v.second, ib) : SetterOf(a, key, v.first, ia);
      side = a_costly ? 'B' : 'A';
    }
    if (s) {
      d.where = FileLine(s->where);
      d.setter_side = side;
    }
    out.push_back(std::move(d));
  }
  // Keys with a known setter first: a call the program made beats a default.
  std::stable_sort(out.begin(), out.end(),
                   [](const StateDifference& x, const StateDifference& y) { return !x.where.empty() && y.where.empty(); });
  return out;
}

}  // namespace magneton::diagnose
