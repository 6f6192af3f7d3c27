#include "graph/tensor_origin.h"

#include <algorithm>
#include <climits>
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

void ClassifyUnproducedTensors(const Trace& trace, TensorOrigins* origin) {
  const size_t tensor_count = trace.tensors.size();
  auto in_trace = [&](int64_t t) { return t >= 0 && static_cast<size_t>(t) < tensor_count; };
  auto unproduced = [&](int64_t t) { return in_trace(t) && trace.tensors[t].producer_op_id == kNoId; };
  // Ops that read a never-produced integral tensor: lookups such as
  // embedding(weight, indices), whose slot-0 float input is a table.
  std::unordered_set<int64_t> lookup_ops;
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role == TensorRole::kInput && unproduced(l.tensor_id) && IsIntegralDtype(trace.tensors[l.tensor_id].dtype)) {
      lookup_ops.insert(l.op_id);
    }
  }
  // The lowest argument slot each tensor is read at (by tensor id: a tensor
  // outside the trace is never asked for below), and each op's outputs (its
  // links, op_tensors being sorted by op): a weight is often viewed first
  // (t(), view()) and the view then read in a weight position, e.g. mm(x, t(W)).
  constexpr int32_t kNeverRead = INT32_MAX;
  std::vector<int32_t> min_slot(tensor_count, kNeverRead);
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role == TensorRole::kInput && in_trace(l.tensor_id)) {
      int32_t& slot = min_slot[static_cast<size_t>(l.tensor_id)];
      slot = std::min(slot, l.slot);
    }
  }
  auto viewed_as_weight = [&](const OpTensor& l) {
    for (const OpTensor& out : trace.LinksOf(l.op_id)) {
      const int64_t u = out.tensor_id;
      if (out.role != TensorRole::kOutput || !in_trace(u)) continue;
      // storage_addr 0: aliasing unknown (engines without addresses, e.g. ONNX Runtime).
      if (trace.tensors[u].storage_addr == 0 ||
          trace.tensors[u].storage_addr != trace.tensors[l.tensor_id].storage_addr) continue;
      const int32_t slot = min_slot[static_cast<size_t>(u)];
      if (slot != kNeverRead && slot >= 1) return true;
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
    // Once seen in a parameter position, a tensor stays a parameter (tied weights).
    if (!origin->emplace(l.tensor_id, label) && label == TensorOrigin::kParameter) {
      origin->assign(l.tensor_id, TensorOrigin::kParameter);
    }
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
  // Labelled tensors are unproduced ones, all in the trace.
  int64_t largest_data = 0;
  origin->ForEach([&](int64_t t, TensorOrigin o) {
    if (o == TensorOrigin::kModelInput && in_trace(t) && !IsIntegralDtype(trace.tensors[t].dtype)) {
      largest_data = std::max(largest_data, elements(t));
    }
  });
  constexpr int64_t kMaxConstantElements = 64;
  std::vector<int64_t> constants;
  origin->ForEach([&](int64_t t, TensorOrigin o) {
    if (o != TensorOrigin::kModelInput || !in_trace(t) || IsIntegralDtype(trace.tensors[t].dtype)) return;
    const int64_t n = elements(t);
    if (n <= kMaxConstantElements && n * kMaxConstantElements <= largest_data) constants.push_back(t);
  });
  for (int64_t t : constants) origin->assign(t, TensorOrigin::kParameter);
}

}  // namespace magneton::graph_internal
