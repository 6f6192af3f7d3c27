// Replay of one recorded ATen op (method.md §4): the same op and overload,
// the same non-tensor arguments, input tensors regenerated with the recorded
// shapes, strides, dtypes and devices, called in a loop until an energy
// reading has moved enough, so a coarse counter gives a per-call figure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "magneton/status.h"

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
  int64_t min_round_ns = 200'000'000;  // each round runs at least this long
  int64_t max_calls_per_round = 1'000'000;
  int rounds = 5;                      // rounds give the spread
  // Reads the meter's total energy now (cumulative µJ); empty: time only.
  std::function<StatusOr<double>()> read_energy_uj;
  // Waits until the device has finished queued work (CUDA sync); may be empty.
  std::function<void()> synchronize;
};

struct ReplayResult {
  int64_t calls_per_round = 0;
  std::vector<double> duration_ns_per_call;  // one per round
  std::vector<double> energy_uj_per_call;    // one per round (empty: no meter)
};

// Checks that the op can be rebuilt (schema found, arguments fit it) and runs it.
StatusOr<ReplayResult> ReplayOp(const OpSpec& spec, const ReplayOptions& options);

}  // namespace magneton::replay
