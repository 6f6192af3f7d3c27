// BuildDataflowGraph: ops -> nodes, tensor ids -> edges. The recorder already
// gives a view or an in-place result its own tensor id with the right
// producer, so identity through aliasing is resolved before we get here.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include "graph/tensor_origin.h"
#include "graph/graph.h"
#include "trace/op_index.h"

namespace magneton {

int32_t DataflowGraph::NodeOfOp(int64_t op_id) const {
  auto it = std::lower_bound(folded_op_ids.begin(), folded_op_ids.end(), op_id);
  return it == folded_op_ids.end() || *it != op_id ? -1 : folded_nodes[static_cast<size_t>(it - folded_op_ids.begin())];
}

StatusOr<DataflowGraph> BuildDataflowGraph(const Trace& trace, const GraphOptions& options) {
  const size_t op_total = trace.ops.size();
  const OpIndexOfId index_of_id(trace);
  // A parent is always an earlier op (the reader refuses anything else): a
  // link to the op itself or to a later one counts as none, so every walk up
  // the tree below visits strictly smaller ids and ends, whatever the Trace.
  auto parent_index = [&](size_t i) -> int64_t {
    const int64_t p = trace.ops[i].parent_id;
    if (p == kNoId || p >= trace.ops[i].id) return -1;
    return index_of_id.Find(p);
  };
  std::vector<bool> has_child(op_total, false);
  for (size_t i = 0; i < op_total; ++i) {
    const int64_t p = parent_index(i);
    if (p >= 0) has_child[static_cast<size_t>(p)] = true;
  }

  // Nodes in op-id order: ids are handed out at op begin, so a producer's id
  // is below every consumer's and id order is a topological order.
  // A compiled call whose XLA ops carry values of their own (JAX jit with
  // --values: record/xla_values.h) is those ops in top-level mode: its
  // dataflow inside pairs by value. They were written at the recording's
  // end, so they are ordered at their call's place (the call's id, then
  // their own), not by their ids.
  std::vector<bool> expanded(op_total, false);
  if (!options.leaf_ops) {
    for (const OpTensor& l : trace.op_tensors) {
      if (l.role != TensorRole::kOutput) continue;
      const int64_t i = index_of_id.Find(l.op_id);
      if (i < 0) continue;
      const int64_t p = parent_index(static_cast<size_t>(i));
      if (p >= 0 && parent_index(static_cast<size_t>(p)) < 0 && trace.str(trace.ops[static_cast<size_t>(i)].name_id).rfind("xla::", 0) == 0) {
        expanded[static_cast<size_t>(p)] = true;
      }
    }
  }
  auto order_key = [&](size_t i) {
    const int64_t p = parent_index(i);
    return std::make_pair(p >= 0 && expanded[static_cast<size_t>(p)] ? trace.ops[static_cast<size_t>(p)].id
                                                                     : trace.ops[i].id,
                          trace.ops[i].id);
  };
  std::vector<size_t> node_ops;
  for (size_t i = 0; i < op_total; ++i) {
    if (IsRecorderOp(trace, trace.ops[i])) continue;  // the recorder's own work: not a node, folded nowhere
    const int64_t p = parent_index(i);
    const bool is_node = options.leaf_ops ? !has_child[i]
                                          : (p < 0 && !expanded[i]) || (p >= 0 && expanded[static_cast<size_t>(p)]);
    if (is_node) node_ops.push_back(i);
  }
  std::sort(node_ops.begin(), node_ops.end(), [&](size_t a, size_t b) { return order_key(a) < order_key(b); });

  DataflowGraph g;
  const int32_t n = static_cast<int32_t>(node_ops.size());
  std::vector<int32_t> node_of_index(op_total, -1);
  for (int32_t v = 0; v < n; ++v) {
    node_of_index[node_ops[v]] = v;
    g.op_ids.push_back(trace.ops[node_ops[v]].id);
  }
  // Fold every other op into a node: top-level mode, its root ancestor; leaf
  // mode, the last leaf in its subtree (the one that wrote its result).
  std::vector<size_t> by_id_desc(op_total);
  for (size_t i = 0; i < op_total; ++i) by_id_desc[i] = i;
  std::sort(by_id_desc.begin(), by_id_desc.end(), [&](size_t a, size_t b) { return trace.ops[a].id > trace.ops[b].id; });
  if (options.leaf_ops) {
    std::vector<int64_t> last_leaf_id(op_total, kNoId);
    for (size_t i : by_id_desc) {  // children (higher ids) before parents
      if (node_of_index[i] >= 0) last_leaf_id[i] = trace.ops[i].id;
      const int64_t p = parent_index(i);
      if (p >= 0 && last_leaf_id[i] != kNoId) {
        auto& pl = last_leaf_id[static_cast<size_t>(p)];
        pl = std::max(pl, last_leaf_id[i]);
      }
    }
    for (size_t i = 0; i < op_total; ++i) {
      if (node_of_index[i] < 0 && last_leaf_id[i] != kNoId) {
        node_of_index[i] = node_of_index[static_cast<size_t>(index_of_id.Find(last_leaf_id[i]))];
      }
    }
  } else {
    // An expanded call folds into its last XLA op (which wrote its result).
    for (size_t i = 0; i < op_total; ++i) {
      const int64_t p = parent_index(i);
      if (p >= 0 && expanded[static_cast<size_t>(p)] && node_of_index[i] >= 0) {
        int32_t& at = node_of_index[static_cast<size_t>(p)];
        at = std::max(at, node_of_index[i]);
      }
    }
    // Parents first: an op's parent has a smaller id, so it already holds its
    // root's node (or none: under a recorder op), and one step resolves the
    // op; linear however deep the tree.
    for (auto it = by_id_desc.rbegin(); it != by_id_desc.rend(); ++it) {
      const size_t i = *it;
      if (node_of_index[i] >= 0) continue;
      const int64_t p = parent_index(i);
      if (p >= 0) node_of_index[i] = node_of_index[static_cast<size_t>(p)];
    }
  }
  {
    std::vector<std::pair<int64_t, int32_t>> folded;
    for (size_t i = 0; i < op_total; ++i) {
      if (node_of_index[i] >= 0) folded.emplace_back(trace.ops[i].id, node_of_index[i]);
    }
    std::sort(folded.begin(), folded.end());
    g.folded_op_ids.reserve(folded.size());
    g.folded_nodes.reserve(folded.size());
    for (const auto& [id, node] : folded) {
      g.folded_op_ids.push_back(id);
      g.folded_nodes.push_back(node);
    }
  }
  // Every op id -> its node (ancestors folded in), through the op's index.
  auto producer_node = [&](int64_t tensor_id) -> int32_t {
    if (tensor_id < 0 || static_cast<size_t>(tensor_id) >= trace.tensors.size()) return -1;
    const int64_t p = trace.tensors[tensor_id].producer_op_id;
    if (p == kNoId) return -1;
    const int64_t i = index_of_id.Find(p);
    return i < 0 ? -1 : node_of_index[static_cast<size_t>(i)];
  };
  const auto too_large = [] { return InvalidArgument("the trace has too many tensor links for one graph (over 4 G)"); };

  {
    std::vector<int32_t> producer(trace.tensors.size());
    g.origin.Reset(trace.tensors.size());
    for (size_t i = 0; i < trace.tensors.size(); ++i) {
      producer[i] = producer_node(trace.tensors[i].id);
      if (producer[i] >= 0) g.origin.emplace(trace.tensors[i].id, TensorOrigin::kProduced);
    }
    if (!g.outputs.Group(static_cast<size_t>(n), producer.size(), [&](size_t i) { return producer[i]; },
                         [&](size_t i) { return trace.tensors[i].id; })) {
      return too_large();
    }
  }
  graph_internal::ClassifyUnproducedTensors(trace, &g.origin);

  // (to, tensor, from) triples; an op tree reading one value many times is one edge.
  std::vector<std::tuple<int32_t, int64_t, int32_t>> links;
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role != TensorRole::kInput) continue;
    const int64_t found = index_of_id.Find(l.op_id);
    if (found < 0) continue;
    const size_t i = static_cast<size_t>(found);
    // Leaf mode: a parent's inputs are read again by its children.
    if ((options.leaf_ops && has_child[i]) || expanded[i]) continue;
    const int32_t c = node_of_index[i];
    if (c < 0) continue;
    int32_t p = producer_node(l.tensor_id);
    if (p == c || p > c) continue;  // internal to the node, or a backwards (racy) edge
    links.emplace_back(c, l.tensor_id, p < 0 ? g.source() : p);
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());

  if (!g.inputs.Group(static_cast<size_t>(n), links.size(), [&](size_t k) { return std::get<0>(links[k]); },
                      [&](size_t k) { return std::get<1>(links[k]); })) {
    return too_large();
  }
  // Which op nodes read another node's value, and whose values another reads.
  std::vector<bool> has_input(static_cast<size_t>(n), false), is_read(static_cast<size_t>(n), false);
  g.edges.reserve(links.size() + 2 * static_cast<size_t>(n) + 1);
  for (const auto& [to, tensor, from] : links) {
    g.edges.push_back({from, to, tensor});
    has_input[to] = true;
    if (from < n) is_read[from] = true;
  }
  links = {};
  // Structural edges: ops that read nothing hang off the source; ops whose
  // results nobody reads (model outputs, dead ends) feed the sink.
  for (int32_t v = 0; v < n; ++v) {
    if (!has_input[v]) g.edges.push_back({g.source(), v, kNoId});
  }
  for (int32_t v = 0; v < n; ++v) {
    if (!is_read[v]) g.edges.push_back({v, g.sink(), g.outputs[v].empty() ? kNoId : g.outputs[v].back()});
  }
  if (n == 0) g.edges.push_back({g.source(), g.sink(), kNoId});
  // Each node's edges in the order they were added, as pushing them one by one gave.
  if (!g.out_edges.Group(static_cast<size_t>(g.node_count()), g.edges.size(),
                         [&](size_t e) { return g.edges[e].from; }, [](size_t e) { return static_cast<int32_t>(e); }) ||
      !g.in_edges.Group(static_cast<size_t>(g.node_count()), g.edges.size(), [&](size_t e) { return g.edges[e].to; },
                        [](size_t e) { return static_cast<int32_t>(e); })) {
    return too_large();
  }

  // Input dependence, in topological order; if no tensor looks like a model
  // input, treat every never-produced tensor as one rather than lose the graph;
  // if there is none either (a script that makes its inputs with recorded ops:
  // torch.randn with a seed, randint, from_numpy), the results of creation ops
  // (ops that read no other op's result) are the inputs.
  std::vector<bool> creation_op(static_cast<size_t>(n), true);
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t e : g.in_edges[v]) creation_op[v] = creation_op[v] && g.edges[e].from == g.source();
  }
  for (int pass = 0; pass < 3; ++pass) {
    const bool all_unproduced_are_inputs = pass >= 1;
    const bool created_are_inputs = pass == 2;
    g.input_dependent.assign(static_cast<size_t>(n), false);
    bool any = false;
    for (int32_t v = 0; v < n; ++v) {
      for (int32_t e : g.in_edges[v]) {
        const GraphEdge& edge = g.edges[e];
        bool dep;
        if (edge.from == g.source()) {
          // A 0-d tensor nobody produced is a wrapped Python number (the
          // element count torch's mean divides by), never the data: taken as
          // the model input it once made a script's last two ops the whole
          // input-dependent graph.
          const std::optional<TensorOrigin> origin = g.origin.find(edge.tensor_id);
          const bool scalar = edge.tensor_id >= 0 && static_cast<size_t>(edge.tensor_id) < trace.tensors.size() &&
                              trace.tensors[edge.tensor_id].shape.empty();
          dep = origin && !scalar && (*origin == TensorOrigin::kModelInput || all_unproduced_are_inputs);
        } else {
          dep = g.input_dependent[edge.from] || (created_are_inputs && edge.from < n && creation_op[edge.from]);
        }
        if (dep) {
          g.input_dependent[v] = true;
          any = true;
          break;
        }
      }
    }
    if (any) break;
  }
  graph_internal::ComputeMainFlow(trace, &g);
  g.op_name_hash.resize(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) {
    const int64_t name = trace.ops[node_ops[v]].name_id;
    g.op_name_hash[v] = name >= 0 && static_cast<size_t>(name) < trace.strings.size()
                            ? std::hash<std::string>{}(trace.strings[name])
                            : 0;
  }
  return g;
}

}  // namespace magneton
