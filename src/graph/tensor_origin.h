// Heuristic labels for tensors no op produced (internal to the graph stage).
#pragma once

#include "graph/graph.h"

namespace magneton::graph_internal {

// Labels every never-produced tensor the trace reads as kModelInput or
// kParameter; see docs/MATCHING.md ("Graph") for the rules.
void ClassifyUnproducedTensors(const Trace& trace, TensorOrigins* origin);

// Fills graph->main_flow (needs input_dependent, edges and origin set).
void ComputeMainFlow(const Trace& trace, DataflowGraph* graph);

}  // namespace magneton::graph_internal
