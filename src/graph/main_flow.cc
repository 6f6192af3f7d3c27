// The main value flow of a graph (DataflowGraph::main_flow). Why: dominators
// over every input-dependent node let side computations that fan out to all
// layers (a causal mask built from arange/le/where, rotary tables, position
// ids) join every layer's attention, so no per-layer node dominates the exit
// and the dominator path loses its cut points. Such side values are derived
// from integers, bools and constants only; the data itself enters either as
// a floating model input or through a lookup of a learned table by integers
// (embedding). Everything downstream of those is the main flow.
#include <string_view>

#include "graph/tensor_origin.h"

namespace magneton::graph_internal {
namespace {

bool IsFloating(std::string_view dtype) {
  return dtype.find("float") != std::string_view::npos || dtype.find("half") != std::string_view::npos ||
         dtype.find("bf16") != std::string_view::npos || dtype.find("double") != std::string_view::npos;
}

int64_t Elements(const TensorMeta& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

}  // namespace

void ComputeMainFlow(const Trace& trace, DataflowGraph* graph) {
  DataflowGraph& g = *graph;
  const int32_t n = g.op_count();
  auto meta = [&](int64_t t) -> const TensorMeta* {
    return t >= 0 && static_cast<size_t>(t) < trace.tensors.size() ? &trace.tensors[t] : nullptr;
  };
  auto origin = [&](int64_t t) {
    return g.origin.find(t).value_or(TensorOrigin::kProduced);
  };
  // `data_dep`: depends on a model input other than a scalar (an offset such
  // as past_seen_tokens is a constant for this purpose).
  std::vector<bool> data_dep(static_cast<size_t>(n), false);
  g.main_flow.assign(static_cast<size_t>(n), false);
  bool any = false;
  for (int32_t v = 0; v < n; ++v) {
    bool reads_table = false, reads_dep_integral = false, main = false;
    for (int32_t e : g.in_edges[v]) {
      const GraphEdge& edge = g.edges[e];
      const TensorMeta* m = meta(edge.tensor_id);
      const bool floating = m && IsFloating(m->dtype);
      if (edge.from == g.source()) {
        if (!m) continue;
        const TensorOrigin o = origin(edge.tensor_id);
        if (o == TensorOrigin::kModelInput && Elements(*m) > 1) {
          data_dep[v] = true;
          if (floating) main = true;
          else reads_dep_integral = true;
        } else if (o == TensorOrigin::kParameter && floating && Elements(*m) > 1) {
          reads_table = true;
        }
      } else if (edge.from < n) {
        if (data_dep[edge.from]) {
          data_dep[v] = true;
          if (g.main_flow[edge.from]) main = true;
          else if (m && !floating) reads_dep_integral = true;
        }
      }
    }
    // A learned table read directly with data-dependent integers: embedding.
    if (reads_table && reads_dep_integral) main = true;
    g.main_flow[v] = main && data_dep[v];
    any = any || g.main_flow[v];
  }
  if (!any) g.main_flow = g.input_dependent;
}

}  // namespace magneton::graph_internal
