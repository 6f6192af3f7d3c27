#include "graph/tensor_origin.h"

#include <algorithm>
#include <string_view>
#include <vector>
#include <unordered_set>

namespace magneton::graph_internal {
namespace {

bool IsIntegralDtype(std::string_view dtype) {
  return dtype.find("int") != std::string_view::npos || dtype.find("bool") != std::string_view::npos ||
         dtype.find("long") != std::string_view::npos;
}

}  // namespace

void ClassifyUnproducedTensors(const Trace& trace, std::unordered_map<int64_t, TensorOrigin>* origin) {
  auto unproduced = [&](int64_t t) {
    return t >= 0 && static_cast<size_t>(t) < trace.tensors.size() && trace.tensors[t].producer_op_id == kNoId;
  };
  // Ops that read a never-produced integral tensor: lookups such as
  // embedding(weight, indices), whose slot-0 float input is a table.
  std::unordered_set<int64_t> lookup_ops;
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role == TensorRole::kInput && unproduced(l.tensor_id) && IsIntegralDtype(trace.tensors[l.tensor_id].dtype)) {
      lookup_ops.insert(l.op_id);
    }
  }
  // The lowest argument slot each tensor is read at, and each op's outputs:
  // a weight is often viewed first (t(), view()) and the view then read in
  // a weight position, e.g. mm(x, t(W)).
  std::unordered_map<int64_t, int32_t> min_slot;
  std::unordered_map<int64_t, std::vector<int64_t>> outputs_of;
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role == TensorRole::kInput) {
      auto [it, inserted] = min_slot.emplace(l.tensor_id, l.slot);
      if (!inserted) it->second = std::min(it->second, l.slot);
    } else {
      outputs_of[l.op_id].push_back(l.tensor_id);
    }
  }
  auto viewed_as_weight = [&](const OpTensor& l) {
    auto it = outputs_of.find(l.op_id);
    if (it == outputs_of.end()) return false;
    for (int64_t u : it->second) {
      if (u < 0 || static_cast<size_t>(u) >= trace.tensors.size()) continue;
      // storage_addr 0: aliasing unknown (engines without addresses, e.g. ONNX Runtime).
      if (trace.tensors[u].storage_addr == 0 ||
          trace.tensors[u].storage_addr != trace.tensors[l.tensor_id].storage_addr) continue;
      auto ms = min_slot.find(u);
      if (ms != min_slot.end() && ms->second >= 1) return true;
    }
    return false;
  };
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role != TensorRole::kInput || !unproduced(l.tensor_id)) continue;
    const TensorMeta& t = trace.tensors[l.tensor_id];
    TensorOrigin label;
    if (IsIntegralDtype(t.dtype)) {
      label = TensorOrigin::kModelInput;  // token ids, positions, masks
    } else if (l.slot >= 1 || lookup_ops.count(l.op_id) || viewed_as_weight(l)) {
      label = TensorOrigin::kParameter;  // weights and biases follow the activation
    } else {
      label = TensorOrigin::kModelInput;
    }
    auto [it, inserted] = origin->emplace(l.tensor_id, label);
    // Once seen in a parameter position, a tensor stays a parameter (tied weights).
    if (!inserted && label == TensorOrigin::kParameter) it->second = TensorOrigin::kParameter;
  }
  // A few floats next to floating data many times larger are constants of the
  // program (thresholds, coefficients: the literal arrays inside JAX's library
  // functions reach primitives unproduced), not data: as model inputs they
  // would start a second main flow that joins the data everywhere downstream.
  auto elements = [&](int64_t t) {
    int64_t n = 1;
    for (int64_t d : trace.tensors[t].shape) n *= d;
    return n;
  };
  int64_t largest_data = 0;
  for (const auto& [t, o] : *origin) {
    if (o == TensorOrigin::kModelInput && !IsIntegralDtype(trace.tensors[t].dtype)) {
      largest_data = std::max(largest_data, elements(t));
    }
  }
  constexpr int64_t kMaxConstantElements = 64;
  for (auto& [t, o] : *origin) {
    if (o != TensorOrigin::kModelInput || IsIntegralDtype(trace.tensors[t].dtype)) continue;
    const int64_t n = elements(t);
    if (n <= kMaxConstantElements && n * kMaxConstantElements <= largest_data) o = TensorOrigin::kParameter;
  }
}

}  // namespace magneton::graph_internal
