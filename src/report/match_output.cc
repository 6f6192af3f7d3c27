#include "report/match_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace magneton::report {
namespace {

using nlohmann::json;

bool ValidOp(const Trace& t, int64_t op_id) { return op_id >= 0 && static_cast<size_t>(op_id) < t.ops.size(); }

std::string OpName(const Trace& t, int64_t op_id) { return ValidOp(t, op_id) ? t.str(t.ops[op_id].name_id) : "?"; }
std::string OpScope(const Trace& t, int64_t op_id) { return ValidOp(t, op_id) ? t.ScopePath(t.ops[op_id].scope_id) : ""; }

// "aten::linear  [GPT2Model/h.0/mlp]" for one op.
std::string OpLabel(const Trace& t, int64_t op_id) {
  if (!ValidOp(t, op_id)) return "?";
  const std::string scope = OpScope(t, op_id);
  return scope.empty() ? OpName(t, op_id) : fmt::format("{}  [{}]", OpName(t, op_id), scope);
}

bool ValidTensor(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.tensors.size(); }

std::string TensorLabel(const Trace& t, int64_t id) {
  if (!ValidTensor(t, id)) return "?";
  const TensorMeta& m = t.tensors[id];
  std::string shape;
  for (size_t i = 0; i < m.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(m.shape[i]);
  return fmt::format("t{} {}[{}]", id, m.dtype, shape);
}

json TensorJson(const Trace& t, int64_t id) {
  json j = {{"id", id}};
  if (ValidTensor(t, id)) {
    j["shape"] = t.tensors[id].shape;
    j["dtype"] = t.tensors[id].dtype;
    j["producer_op_id"] = t.tensors[id].producer_op_id == kNoId ? json(nullptr) : json(t.tensors[id].producer_op_id);
  }
  return j;
}

json OpsJson(const Trace& t, std::span<const int64_t> ops) {
  json out = json::array();
  for (int64_t op : ops) out.push_back({{"id", op}, {"name", OpName(t, op)}, {"scope", OpScope(t, op)}});
  return out;
}

json CutJson(const Trace& a, const Trace& b, std::span<const TensorPair> cut) {
  json out = json::array();
  for (const TensorPair& p : cut) out.push_back({{"a", TensorJson(a, p.a)}, {"b", TensorJson(b, p.b)}});
  return out;
}

}  // namespace

std::string MatchText(const Trace& a, const Trace& b, const std::string& label_a, const std::string& label_b,
                      double epsilon, size_t inputs, const MatchResult& r) {
  std::string s = fmt::format("A: {}\nB: {}\nepsilon {:g}, {} model input(s): {} matched region pair(s), {}/{} ops "
                              "unmatched\n\n",
                              label_a, label_b, epsilon, inputs, r.regions.size(), r.unmatched_ops_a.size(),
                              r.unmatched_ops_b.size());
  const int width = 56;
  for (size_t i = 0; i < r.regions.size(); ++i) {
    const RegionPair& rp = r.regions[i];
    const std::string from =
        rp.starts_at_model_inputs ? "model inputs"
        : rp.inputs.empty()       ? "?"
                                  : TensorLabel(a, rp.inputs[0].a) + " = " + TensorLabel(b, rp.inputs[0].b);
    const std::string to =
        rp.outputs.empty() ? "?" : TensorLabel(a, rp.outputs[0].a) + " = " + TensorLabel(b, rp.outputs[0].b);
    s += fmt::format("region {}  ({} vs {} ops)  from {}  to {}\n", i + 1, rp.ops_a.size(), rp.ops_b.size(), from, to);
    const size_t rows = std::max(rp.ops_a.size(), rp.ops_b.size());
    for (size_t k = 0; k < rows; ++k) {
      const std::string left = k < rp.ops_a.size() ? OpLabel(a, rp.ops_a[k]) : "";
      const std::string right = k < rp.ops_b.size() ? OpLabel(b, rp.ops_b[k]) : "";
      s += fmt::format("  {:<{}} | {}\n", left, width, right);
    }
    s += "\n";
  }
  if (!r.unmatched_ops_a.empty() || !r.unmatched_ops_b.empty()) {
    s += fmt::format("unmatched: {} op(s) in A, {} op(s) in B\n", r.unmatched_ops_a.size(), r.unmatched_ops_b.size());
  }
  return s;
}

std::string MatchJson(const Trace& a, const Trace& b, const std::string& label_a, const std::string& label_b,
                      double epsilon, size_t inputs, const MatchResult& r) {
  json regions = json::array();
  for (const RegionPair& rp : r.regions) {
    regions.push_back({{"ops_a", OpsJson(a, rp.ops_a)},
                       {"ops_b", OpsJson(b, rp.ops_b)},
                       {"starts_at_model_inputs", rp.starts_at_model_inputs},
                       {"inputs", CutJson(a, b, rp.inputs)},
                       {"outputs", CutJson(a, b, rp.outputs)},
                       {"depth", rp.depth}});
  }
  json doc = {{"a", label_a},
              {"b", label_b},
              {"epsilon", epsilon},
              {"model_inputs", inputs},
              {"regions", std::move(regions)},
              {"unmatched_a", OpsJson(a, r.unmatched_ops_a)},
              {"unmatched_b", OpsJson(b, r.unmatched_ops_b)},
              {"tensor_comparisons", r.tensor_comparisons}};
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace magneton::report
