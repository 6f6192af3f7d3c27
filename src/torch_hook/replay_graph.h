// CUDA graphs for replay: the op's calls captured once and launched as one
// graph, so a short op's launch overhead does not count as its time and
// energy (docs/ENERGY.md, "Replay on a GPU"). Through torch's own
// torch.cuda.CUDAGraph (the Python API, called from C++ with the GIL), which
// every CUDA build of torch has and which takes care of the caching
// allocator's graph pool, RNG state and capture mode; the hook itself is
// built against whatever torch is installed, CPU-only or not.
#pragma once

#include <c10/core/Device.h>

#include <functional>

#include "magneton/status.h"
#include "replay/replay_loop.h"

namespace magneton::replay {

// Warms the op up on a side stream, captures calls_per_graph calls of
// call_once (0: sized from one call's time, up to 64, so one launch holds
// about 2 ms of work), and returns the issuer that launches the graph.
// An op that cannot be captured (it synchronises, allocates host memory,
// changes shape) gives an error, and the caller falls back to a plain loop.
StatusOr<CallIssuer> CaptureCudaGraph(const std::function<Status()>& call_once, const c10::Device& device,
                                      int64_t calls_per_graph = 0);

}  // namespace magneton::replay
