// Independent pieces of one level of the matcher (internal to the match
// stage): the same forward run N times on one input, or a batch split by
// hand, shares no data between its pieces, so no dominator path runs through
// more than one of them. The matcher pairs such pieces by their outputs
// instead of folding all but one into the region before the first cut.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace magneton::match_internal {

struct Component {
  std::vector<int32_t> members;  // node indices, ascending; main flow and what feeds only it
  int32_t sink = -1;             // its exit: the deepest dead end, the latest among equals
};

// Weakly connected pieces of the level's main-flow members (edges between
// members only: a shared model input, weight or mask does not join them),
// except the piece that holds the level's exit (`end_node`, or at the top
// level the deepest dead end), in order of their first member. Members off
// the main flow join a piece when every consumer they have in the level is
// in it. `scratch` has one entry per graph node, all -1, and is left so.
std::vector<Component> IndependentComponents(const DataflowGraph& g, const std::vector<int32_t>& members,
                                             int32_t end_node, std::vector<int32_t>& scratch);

}  // namespace magneton::match_internal
