// Replay of one recorded ATen op (method.md §4): the same op and overload,
// the same non-tensor arguments, input tensors regenerated with the recorded
// shapes, strides, dtypes and devices, called in a loop until an energy
// reading has moved enough, so a coarse counter gives a per-call figure.
// On a GPU the inputs are made on the op's device, every reading waits for
// the device, and the calls are captured in a CUDA graph where the op
// allows it (docs/ENERGY.md, "Replay on a GPU").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "magneton/status.h"
#include "replay/replay_loop.h"
#include "replay/replay_target.h"

namespace magneton::replay {

struct TensorSpec {
  int64_t slot = 0;    // the input slot ({"t": slot} in the arguments)
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::string dtype;   // "float32", as recorded
  std::string device;  // "cpu", "cuda:0"
};

struct OpSpec {
  std::string name;  // "aten::addmm" or "aten::add.Tensor"
  std::string args;  // recorded JSON (trace/op_args.h): [{"t":0},{"t":1},1,1]
  std::vector<TensorSpec> inputs;  // the recorded inputs, each with its slot
};

struct ReplayOptions {
  LoopOptions loop;       // round length, counter movement, rounds (replay/replay_loop.h)
  ReplayTarget target;    // host or device, graphs wanted (replay/replay_target.h)
  // Reads the meter's total energy now (cumulative µJ) in the target's
  // domains; empty: time only.
  std::function<StatusOr<double>()> read_energy_uj;
};

struct ReplayResult {
  LoopResult loop;
  std::string method;  // "loop", "cuda-graph", or "loop: <why no graph>"
};

// Checks that the op can be rebuilt (schema found, arguments fit it), makes
// its inputs on the target's device, and runs the measurement loop.
StatusOr<ReplayResult> ReplayOp(const OpSpec& spec, const ReplayOptions& options);

}  // namespace magneton::replay
