#include <algorithm>

#include "graph/graph.h"

namespace magneton {

bool DominatorTree::Dominates(int32_t a, int32_t b) const {
  if (b < 0 || static_cast<size_t>(b) >= idom.size() || idom[b] < 0) return false;
  if (a < 0 || static_cast<size_t>(a) >= idom.size() || idom[a] < 0) return false;
  // At most one step per node, whatever the arrays hold.
  for (size_t steps = 0; steps < idom.size() && depth[b] > depth[a]; ++steps) {
    b = idom[b];
    if (b < 0 || static_cast<size_t>(b) >= idom.size()) return false;
  }
  return a == b;
}

std::vector<int32_t> DominatorTree::PathFromRoot(int32_t node) const {
  std::vector<int32_t> path;
  if (node < 0 || static_cast<size_t>(node) >= idom.size() || idom[node] < 0) return path;
  // A tree has no longer path than its node count; a malformed one ends there.
  for (size_t steps = 0; steps < idom.size(); ++steps) {
    path.push_back(node);
    if (node == root) break;
    node = idom[node];
    if (node < 0 || static_cast<size_t>(node) >= idom.size()) break;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

namespace {

template <typename Preds>
DominatorTree DominatorsDag(int32_t node_count, const std::vector<int32_t>& topo, const Preds& preds) {
  DominatorTree tree;
  tree.idom.assign(static_cast<size_t>(node_count), -1);
  tree.depth.assign(static_cast<size_t>(node_count), 0);
  if (topo.empty()) return tree;
  std::vector<int32_t> order(static_cast<size_t>(node_count), -1);  // position in topo
  for (size_t i = 0; i < topo.size(); ++i) order[topo[i]] = static_cast<int32_t>(i);
  tree.root = topo[0];
  tree.idom[tree.root] = tree.root;
  auto intersect = [&](int32_t a, int32_t b) {
    while (a != b) {
      while (order[a] > order[b]) a = tree.idom[a];
      while (order[b] > order[a]) b = tree.idom[b];
    }
    return a;
  };
  // In a DAG every predecessor precedes the node in topological order, so its
  // idom is final when we get here: one sweep suffices.
  for (size_t i = 1; i < topo.size(); ++i) {
    const int32_t v = topo[i];
    int32_t new_idom = -1;
    for (int32_t p : preds[v]) {
      if (p < 0 || order[p] < 0 || order[p] >= static_cast<int32_t>(i) || tree.idom[p] < 0) continue;
      new_idom = new_idom < 0 ? p : intersect(p, new_idom);
    }
    tree.idom[v] = new_idom;
    if (new_idom >= 0) tree.depth[v] = tree.depth[new_idom] + 1;
  }
  return tree;
}

}  // namespace

DominatorTree ComputeDominatorsDag(int32_t node_count, const std::vector<int32_t>& topo,
                                   const std::vector<std::vector<int32_t>>& preds) {
  return DominatorsDag(node_count, topo, preds);
}

DominatorTree ComputeDominatorsDag(int32_t node_count, const std::vector<int32_t>& topo,
                                   const NodeLists<int32_t>& preds) {
  return DominatorsDag(node_count, topo, preds);
}

DominatorTree ComputeDominators(const DataflowGraph& graph) {
  std::vector<int32_t> topo;
  topo.reserve(static_cast<size_t>(graph.node_count()));
  topo.push_back(graph.source());
  for (int32_t v = 0; v < graph.op_count(); ++v) topo.push_back(v);
  topo.push_back(graph.sink());
  NodeLists<int32_t> preds;
  preds.Group(static_cast<size_t>(graph.node_count()), graph.edges.size(),
              [&](size_t i) { return graph.edges[i].to; }, [&](size_t i) { return graph.edges[i].from; });
  return ComputeDominatorsDag(graph.node_count(), topo, preds);
}

DominatorTree ComputePostDominators(const DataflowGraph& graph) {
  std::vector<int32_t> topo;
  topo.reserve(static_cast<size_t>(graph.node_count()));
  topo.push_back(graph.sink());
  for (int32_t v = graph.op_count(); v-- > 0;) topo.push_back(v);
  topo.push_back(graph.source());
  NodeLists<int32_t> succs;
  succs.Group(static_cast<size_t>(graph.node_count()), graph.edges.size(),
              [&](size_t i) { return graph.edges[i].from; }, [&](size_t i) { return graph.edges[i].to; });
  return ComputeDominatorsDag(graph.node_count(), topo, succs);
}

}  // namespace magneton
