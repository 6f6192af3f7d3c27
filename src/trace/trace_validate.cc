#include "trace/trace_validate.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace magneton {
namespace {

Status Bad(const char* table, int64_t id, const std::string& what) {
  return Corrupt(std::string(table) + " row id " + std::to_string(id) + ": " + what);
}

// Rows indexed by id must hold ids 0, 1, 2, ...
Status NotDense(const char* table, int64_t id, size_t index) {
  return Bad(table, id, "ids are not 0, 1, 2, ... (at index " + std::to_string(index) + ")");
}

bool InRange(int64_t id, size_t n) { return id >= 0 && static_cast<size_t>(id) < n; }
bool NullableInRange(int64_t id, size_t n) { return id == kNoId || InRange(id, n); }

// Which ids the ops have (ops sorted by id, checked first). Recordings number
// ops densely from 0, so almost always a range check that touches no op; a
// killed run's gaps take a bitmap (one bit per id), anything sparser a
// binary search.
class OpIds {
 public:
  explicit OpIds(const std::vector<OpEvent>& ops) : ops_(ops) {
    if (ops.empty()) return;
    const int64_t last = ops.back().id;
    dense_ = ops.front().id == 0 && last == static_cast<int64_t>(ops.size()) - 1;
    if (!dense_ && last >= 0 && last < static_cast<int64_t>(4 * ops.size() + 4096)) {
      present_.assign(static_cast<size_t>(last) + 1, false);
      for (const OpEvent& op : ops) present_[static_cast<size_t>(op.id)] = true;
    }
  }
  bool Has(int64_t id) const {
    if (id < 0) return false;
    if (dense_) return id < static_cast<int64_t>(ops_.size());
    if (!present_.empty()) return id < static_cast<int64_t>(present_.size()) && present_[static_cast<size_t>(id)];
    auto it = std::lower_bound(ops_.begin(), ops_.end(), id, [](const OpEvent& op, int64_t v) { return op.id < v; });
    return it != ops_.end() && it->id == id;
  }

 private:
  const std::vector<OpEvent>& ops_;
  bool dense_ = false;
  std::vector<bool> present_;
};

}  // namespace

std::string ParentLinkProblem(int64_t parent, int64_t id, const char* column) {
  if (parent == kNoId) return "";
  if (parent >= 0 && parent < id) return "";
  std::string why = std::string(column) + " " + std::to_string(parent);
  if (parent == id) return why + " names the row itself (a cycle)";
  if (parent > id) return why + " names a later row (parents are written before their children; this allows a cycle)";
  return why + " is negative";
}

Status ValidateTraceStructure(const Trace& t) {
  const size_t n_strings = t.strings.size();
  for (size_t i = 0; i < t.frames.size(); ++i) {
    const Frame& f = t.frames[i];
    if (f.id != static_cast<int64_t>(i)) return NotDense("frames", f.id, i);
    if (!InRange(f.file_id, n_strings) || !InRange(f.function_id, n_strings)) {
      return Bad("frames", f.id, "file or function names no string");
    }
  }
  for (size_t i = 0; i < t.call_paths.size(); ++i) {
    const CallPath& p = t.call_paths[i];
    if (p.id != static_cast<int64_t>(i)) return NotDense("call_paths", p.id, i);
    if (!InRange(p.frame_id, t.frames.size())) {
      return Bad("call_paths", p.id, "frame_id " + std::to_string(p.frame_id) + " names no frame");
    }
    if (std::string why = ParentLinkProblem(p.parent_id, p.id, "parent_id"); !why.empty()) {
      return Bad("call_paths", p.id, why);
    }
  }
  for (size_t i = 0; i < t.scopes.size(); ++i) {
    const Scope& s = t.scopes[i];
    if (s.id != static_cast<int64_t>(i)) return NotDense("scopes", s.id, i);
    if (!InRange(s.name_id, n_strings) || !InRange(s.type_id, n_strings)) {
      return Bad("scopes", s.id, "name or type names no string");
    }
    if (!NullableInRange(s.init_call_path_id, t.call_paths.size())) {
      return Bad("scopes", s.id, "init_call_path_id " + std::to_string(s.init_call_path_id) + " names no call path");
    }
    if (std::string why = ParentLinkProblem(s.parent_id, s.id, "parent_id"); !why.empty()) {
      return Bad("scopes", s.id, why);
    }
  }
  for (size_t i = 0; i < t.runtime_states.size(); ++i) {
    if (t.runtime_states[i].id != static_cast<int64_t>(i)) {
      return NotDense("runtime_states", t.runtime_states[i].id, i);
    }
  }
  int64_t last_op = kNoId;
  bool dense_so_far = true;  // ops[0..i) have ids 0..i-1
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const OpEvent& op = t.ops[i];
    if (op.id < 0) return Bad("ops", op.id, "the id is negative");
    if (op.id <= last_op) {
      return Bad("ops", op.id, op.id == last_op ? "the id repeats" : "ops are not in id order");
    }
    last_op = op.id;
    dense_so_far = dense_so_far && op.id == static_cast<int64_t>(i);
    if (!InRange(op.name_id, n_strings)) {
      return Bad("ops", op.id, "name_id " + std::to_string(op.name_id) + " names no string");
    }
    if (!NullableInRange(op.scope_id, t.scopes.size())) {
      return Bad("ops", op.id, "scope_id " + std::to_string(op.scope_id) + " names no scope");
    }
    if (!NullableInRange(op.call_path_id, t.call_paths.size())) {
      return Bad("ops", op.id, "call_path_id " + std::to_string(op.call_path_id) + " names no call path");
    }
    if (!NullableInRange(op.state_id, t.runtime_states.size())) {
      return Bad("ops", op.id, "state_id " + std::to_string(op.state_id) + " names no runtime state");
    }
    if (op.end_ns < op.start_ns) return Bad("ops", op.id, "it ends before it starts");
    if (op.parent_id == kNoId) continue;
    if (std::string why = ParentLinkProblem(op.parent_id, op.id, "parent_id"); !why.empty()) {
      return Bad("ops", op.id, why);
    }
    // An earlier id, so one of the ops before this one: any of them when dense.
    const auto before = t.ops.begin() + static_cast<std::ptrdiff_t>(i);
    if (!dense_so_far && !std::binary_search(t.ops.begin(), before, op.parent_id, [](const auto& x, const auto& y) {
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, OpEvent>) {
            return x.id < y;
          } else {
            return x < y.id;
          }
        })) {
      return Bad("ops", op.id, "parent id " + std::to_string(op.parent_id) + " names no op");
    }
  }
  const OpIds op_ids(t.ops);
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const TensorMeta& m = t.tensors[i];
    if (m.id != static_cast<int64_t>(i)) return NotDense("tensors", m.id, i);
    if (m.producer_op_id != kNoId && !op_ids.Has(m.producer_op_id)) {
      return Bad("tensors", m.id, "producer_op_id " + std::to_string(m.producer_op_id) + " names no op");
    }
  }
  for (size_t i = 0; i < t.op_tensors.size(); ++i) {
    const OpTensor& l = t.op_tensors[i];
    auto bad = [&](const std::string& what) {
      return Corrupt("op_tensors link " + std::to_string(i) + " (op " + std::to_string(l.op_id) + "): " + what);
    };
    if (l.role != TensorRole::kInput && l.role != TensorRole::kOutput) return bad("unknown role");
    // Sorted (checked below): an op's links are consecutive, its id looked up once.
    if ((i == 0 || t.op_tensors[i - 1].op_id != l.op_id) && !op_ids.Has(l.op_id)) return bad("names no op");
    if (!InRange(l.tensor_id, t.tensors.size())) {
      return bad("tensor id " + std::to_string(l.tensor_id) + " names no tensor");
    }
    // Trace::LinksOf finds an op's links by binary search.
    if (i > 0) {
      const OpTensor& p = t.op_tensors[i - 1];
      if (std::make_tuple(p.op_id, p.role, p.slot) > std::make_tuple(l.op_id, l.role, l.slot)) {
        return bad("links are not sorted by (op, role, slot)");
      }
    }
  }
  for (size_t i = 0; i < t.device_activities.size(); ++i) {
    const DeviceActivity& a = t.device_activities[i];
    auto bad = [&](const std::string& what) {
      return Corrupt("device_activities row " + std::to_string(i) + " (in file order): " + what);
    };
    if (!InRange(a.name_id, n_strings)) return bad("name_id " + std::to_string(a.name_id) + " names no string");
    if (a.op_id != kNoId && !op_ids.Has(a.op_id)) return bad("op_id " + std::to_string(a.op_id) + " names no op");
    if (a.captured_op_id != kNoId && !op_ids.Has(a.captured_op_id))
      return bad("captured_op_id " + std::to_string(a.captured_op_id) + " names no op");
    if (a.end_ns < a.start_ns) return bad("it ends before it starts");
  }
  return Status::Ok();
}

}  // namespace magneton
