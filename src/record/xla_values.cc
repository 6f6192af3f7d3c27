#include "record/xla_values.h"

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>

#include "trace/sqlite_util.h"

namespace magneton {

namespace {

void PlaceTensor(CallTensors* call, bool output, int64_t slot, int64_t tensor_id) {
  auto& v = output ? call->outputs : call->inputs;
  if (slot < 0 || slot > 1'000'000) return;
  if (static_cast<size_t>(slot) >= v.size()) v.resize(static_cast<size_t>(slot) + 1, kNoId);
  v[static_cast<size_t>(slot)] = tensor_id;
}

}  // namespace

CallTensors CallTensorsOf(const std::vector<OpTensor>& links) {
  CallTensors call;
  for (const OpTensor& t : links) PlaceTensor(&call, t.role == TensorRole::kOutput, t.slot, t.tensor_id);
  return call;
}

StatusOr<std::map<int64_t, CallTensors>> ReadCallTensors(const std::string& trace_path,
                                                         const std::vector<int64_t>& op_ids) {
  std::map<int64_t, CallTensors> out;
  if (op_ids.empty()) return out;
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(trace_path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return sqlite::ErrorFrom(raw, rc, "cannot open trace " + trace_path + " to read its tensors");
  for (const int64_t id : op_ids) {
    CallTensors& call = out[id];
    MAGNETON_ASSIGN_OR_RETURN(
        sqlite::Statement s,
        sqlite::Statement::Prepare(db.get(), "SELECT role, slot, tensor_id FROM op_tensors WHERE op_id = ?"));
    s.BindInt(1, id);
    while (true) {
      MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db.get()));
      if (!row) break;
      PlaceTensor(&call, s.ColumnInt(0) != 0, s.ColumnInt(1), s.ColumnInt(2));
    }
  }
  return out;
}

std::vector<std::vector<OpTensor>> XlaValueLinks(Recorder& rec, const XlaReplay& replay, const HloModuleInfo& module,
                                                 const CallTensors& call, const std::vector<std::string>& thunk_names,
                                                 const std::vector<int64_t>& thunk_op_ids, XlaValueStats* stats) {
  std::vector<std::vector<OpTensor>> links(thunk_names.size());
  std::unordered_map<std::string, size_t> thunk_of;  // the first run of each instruction
  for (size_t i = 0; i < thunk_names.size(); ++i) thunk_of.emplace(thunk_names[i], i);
  // Equation values by (op_name, source), in equation order.
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_key;
  std::map<std::string, std::vector<size_t>> by_name;  // for metadata without a source line
  for (size_t i = 0; i < replay.values.size(); ++i) {
    by_key[{replay.values[i].op_name, replay.values[i].source}].push_back(i);
    by_name[replay.values[i].op_name].push_back(i);
  }
  std::vector<bool> taken(replay.values.size(), false);
  auto take = [&](const HloFlowResult& r) -> const XlaReplayValue* {
    const std::vector<size_t>* candidates = nullptr;
    if (!r.source.empty()) {
      auto it = by_key.find({r.op_name, r.source});
      if (it != by_key.end()) candidates = &it->second;
    } else {
      auto it = by_name.find(r.op_name);
      if (it != by_name.end()) candidates = &it->second;
    }
    if (!candidates) return nullptr;
    for (size_t i : *candidates) {
      if (!taken[i] && replay.values[i].shape == r.dims) {
        taken[i] = true;
        return &replay.values[i];
      }
    }
    return nullptr;
  };
  // The call's results: the root, or the root tuple's operands, by slot.
  std::unordered_map<std::string, int32_t> result_slot;
  for (const HloEntryInstruction& e : module.entry) {
    if (!e.root) continue;
    if (e.opcode == "tuple") {
      for (size_t i = 0; i < e.operands.size(); ++i) result_slot.emplace(e.operands[i], static_cast<int32_t>(i));
    } else {
      result_slot.emplace(e.name, 0);
    }
  }
  auto call_output = [&](const std::string& name) -> int64_t {
    auto it = result_slot.find(name);
    if (it == result_slot.end() || static_cast<size_t>(it->second) >= call.outputs.size()) return kNoId;
    return call.outputs[static_cast<size_t>(it->second)];
  };
  std::unordered_map<std::string, std::vector<int64_t>> value_of;  // instruction -> its tensors
  for (const HloEntryInstruction& e : module.entry) {
    std::vector<int64_t>& mine = value_of[e.name];
    if (e.opcode == "parameter") {
      const bool known = e.parameter_number >= 0 && static_cast<size_t>(e.parameter_number) < call.inputs.size();
      mine.push_back(known ? call.inputs[static_cast<size_t>(e.parameter_number)] : kNoId);
      continue;
    }
    if (e.opcode == "constant") continue;
    if (e.opcode == "bitcast" && e.operands.size() == 1) {  // same buffer, same row-major values
      mine = value_of[e.operands[0]];
      continue;
    }
    if (e.opcode == "get-tuple-element" && e.operands.size() == 1) {
      const auto& whole = value_of[e.operands[0]];
      if (e.tuple_index >= 0 && static_cast<size_t>(e.tuple_index) < whole.size()) {
        mine.push_back(whole[static_cast<size_t>(e.tuple_index)]);
      }
      continue;
    }
    if (e.opcode == "tuple") {
      for (const std::string& o : e.operands) {
        const auto& v = value_of[o];
        mine.push_back(v.size() == 1 ? v[0] : kNoId);
      }
      continue;
    }
    auto thunk = thunk_of.find(e.name);
    if (thunk == thunk_of.end()) continue;  // not run as a thunk of its own (or not seen)
    const int64_t op_id = thunk_op_ids[thunk->second];
    std::vector<OpTensor>& out = links[thunk->second];
    for (size_t r = 0; r < e.results.size(); ++r) {
      const XlaReplayValue* v = take(e.results[r]);
      int64_t tensor = e.results.size() == 1 ? call_output(e.name) : kNoId;
      if (tensor == kNoId && v) {
        TensorMeta meta;
        meta.shape = v->shape;
        std::vector<int64_t> strides(v->shape.size());
        int64_t stride = 1;
        for (size_t d = v->shape.size(); d-- > 0;) strides[d] = stride, stride *= std::max<int64_t>(v->shape[d], 1);
        meta.strides = std::move(strides);
        meta.dtype = v->dtype;
        meta.device = "cpu";
        meta.producer_op_id = op_id;
        tensor = rec.AddTensor(std::move(meta));
        if (!v->fingerprint.empty()) rec.AddFingerprint(tensor, v->fingerprint);
      }
      mine.push_back(tensor);
      if (tensor != kNoId) out.push_back({kNoId, TensorRole::kOutput, static_cast<int32_t>(r), tensor});
    }
    if (out.empty()) {
      stats->ops_without++;
    } else {
      stats->ops_with_values++;
    }
    for (size_t j = 0; j < e.operands.size(); ++j) {
      const auto& v = value_of[e.operands[j]];
      if (v.size() == 1 && v[0] != kNoId) {
        out.push_back({kNoId, TensorRole::kInput, static_cast<int32_t>(j), v[0]});
        stats->inputs_linked++;
      }
    }
  }
  for (auto& l : links) {
    std::sort(l.begin(), l.end(), [](const OpTensor& a, const OpTensor& b) {
      return std::make_pair(a.role, a.slot) < std::make_pair(b.role, b.slot);
    });
  }
  stats->calls++;
  return links;
}

}  // namespace magneton
