// The dataflow DAG of one trace: ops as nodes, tensors as edges from the op
// that produced a value to each op that read it, plus a virtual source (model
// inputs, parameters, constants) and a virtual sink (values nobody consumed).
// Dominators and post-dominators over it drive subgraph matching.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "graph/node_lists.h"
#include "graph/tensor_origins.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

struct GraphOptions {
  // false: nodes are top-level ops (parent_id == kNoId), each standing for its
  // whole subtree. true: nodes are leaf ops (ops with no children).
  bool leaf_ops = false;
};

struct GraphEdge {
  int32_t from = 0;
  int32_t to = 0;
  int64_t tensor_id = kNoId;  // kNoId for the structural edges to/from source and sink
};

struct DataflowGraph {
  // Nodes [0, op_count) are ops in id (= start = topological) order; then the
  // source and the sink.
  std::vector<int64_t> op_ids;
  // Every op id in a node (ancestors folded in), ascending, and that node:
  // two arrays (12 bytes an op) where a hash map took ~50.
  std::vector<int64_t> folded_op_ids;
  std::vector<int32_t> folded_nodes;
  std::vector<GraphEdge> edges;
  NodeLists<int32_t> out_edges;  // node -> edge indices, ascending
  NodeLists<int32_t> in_edges;
  NodeLists<int64_t> outputs;  // op node -> tensors it produced (deduplicated)
  NodeLists<int64_t> inputs;   // op node -> tensors it read from outside itself
  TensorOrigins origin;  // every tensor the graph touches
  // Whether the node depends (transitively) on a model input, as opposed to
  // only on parameters and constants (e.g. a weight transpose).
  std::vector<bool> input_dependent;
  // The main value flow: input-dependent nodes that carry the model's data,
  // as opposed to side computations derived only from integer/bool values
  // (shapes, positions, masks) and constants. Dominators are computed over
  // these, so a causal mask read by every layer does not hide the per-layer
  // cut points (docs/MATCHING.md, "Main flow"). Falls back to
  // input_dependent when no node qualifies.
  std::vector<bool> main_flow;
  // Hash of each op node's name (e.g. "aten::addmm"), for tie-breaking between
  // equally long cut chains in favour of pairing like with like.
  std::vector<uint64_t> op_name_hash;

  // The node op_id is folded into; -1 when it is in none (a recorder op).
  int32_t NodeOfOp(int64_t op_id) const;
  int32_t op_count() const { return static_cast<int32_t>(op_ids.size()); }
  int32_t source() const { return op_count(); }
  int32_t sink() const { return op_count() + 1; }
  int32_t node_count() const { return op_count() + 2; }
};

// Edges that would point backwards in op-id order (only possible with
// cross-thread races in the recording) are dropped, so the result is a DAG
// whose node order is a topological order.
StatusOr<DataflowGraph> BuildDataflowGraph(const Trace& trace, const GraphOptions& options = {});

// A dominator tree over a DAG given by successor lists, nodes in topological
// order. idom[root] == root; unreachable nodes have idom == -1.
struct DominatorTree {
  int32_t root = 0;
  std::vector<int32_t> idom;
  std::vector<int32_t> depth;  // root: 0
  bool Dominates(int32_t a, int32_t b) const;  // reflexive
  // root, ..., node along immediate dominators.
  std::vector<int32_t> PathFromRoot(int32_t node) const;
};

// Cooper-Harvey-Kennedy on a DAG: with nodes visited in topological order one
// sweep is final, and each intersection walks the tree, so near-linear in
// practice. `topo` lists the nodes to consider (root first); `preds` gives
// predecessors in the same numbering; nodes outside `topo` are ignored.
DominatorTree ComputeDominatorsDag(int32_t node_count, const std::vector<int32_t>& topo,
                                   const std::vector<std::vector<int32_t>>& preds);
// The same with the predecessors as compressed rows (no vector per node).
DominatorTree ComputeDominatorsDag(int32_t node_count, const std::vector<int32_t>& topo,
                                   const NodeLists<int32_t>& preds);

// Dominators from the source / post-dominators from the sink of the graph.
DominatorTree ComputeDominators(const DataflowGraph& graph);
DominatorTree ComputePostDominators(const DataflowGraph& graph);

}  // namespace magneton
