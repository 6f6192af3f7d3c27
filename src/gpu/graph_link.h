// CUDA graphs: the kernels a graph launch ran, linked to the recorded ops
// whose launches created their nodes while the graph was captured
// (docs/TRACE_FORMAT.md "CUDA graphs"; what the sources hold:
// docs/ARCHITECTURE.md "CUDA graphs").
//
// A capture runs the program's ops, but their launches queue nothing: each
// adds a node to the graph. A replay (cudaGraphLaunch) runs every node, and
// CUPTI gives each kernel it ran the launch's correlation id and the node's
// id. The recorder marks both with ops of its own
// (python/magneton/recorders/torch_cuda_graphs.py): a capture op
// (kGraphCaptureOp) whose descendants are the captured ops, and a replay op
// (kGraphReplayOp) around each replay, both naming their graph in their args
// ({"graph": N}). Linking is by ids and time containment only:
//   capture launches = the source's launch calls on the capture op's thread
//     inside it, made by a captured op, that ran no device work (and, where
//     the source draws launch flows, that it drew one from), in time order;
//   a replay = a launch whose device work carries a graph id, made inside a
//     replay op; the capture is the latest recorded one of that graph;
//   the replay's distinct node ids, ascending (nodes are numbered as they
//     are created), pair one for one with the capture launches; a different
//     count pairs nothing. Device work of another graph id than the capture's
//     first matched replay is never paired.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "gpu/activity.h"
#include "gpu/open_ops.h"
#include "trace/op_spans.h"

namespace magneton::gpu {

inline constexpr char kGraphCaptureOp[] = "magneton::cuda_graph_capture";
inline constexpr char kGraphReplayOp[] = "cuda_graph::replay";

struct GraphLinkStats {
  size_t graph_launches = 0;     // launches whose device work carries a graph id
  size_t graph_activities = 0;   // device work a graph ran
  size_t captures = 0;           // recorded captures
  size_t captured_ops = 0;       // recorded ops inside them
  size_t captured_launches = 0;  // launches inside captures that queued a node
  size_t replays_matched = 0;    // graph launches whose nodes paired with a capture's launches
  size_t replays_unmatched = 0;  // graph launches of a recorded capture whose nodes did not pair
  size_t linked_to_captured_op = 0;  // device work given the captured op that made its node
};

// For each of the batch's activities (same index), the index into ops of the
// captured op that created its node, or -1. `op_of_launch` is each launch's
// recorded op (index into ops) as the linker resolved it; `offset_ns` maps
// the source's clock onto the ops' (op = source − offset).
std::vector<int64_t> LinkGraphCaptures(const ActivityBatch& batch, const std::vector<OpSpan>& ops,
                                       const OpenOps& open, int64_t offset_ns,
                                       const std::unordered_map<uint64_t, int64_t>& op_of_launch,
                                       GraphLinkStats* stats);

}  // namespace magneton::gpu
