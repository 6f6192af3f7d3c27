// How many threads the recorded program's ops ran on, where its framework
// recorded the count as a runtime state (docs/DIFF.md, "A busy machine").
// The load bound counts the threads that wait for one another at an op's
// barriers; a program that told its framework to use one thread has none,
// whatever its affinity mask allows.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "detect/detect.h"

namespace magneton::detect {
namespace {

// The intra-op thread counts the recorders write: torch's at::get_num_threads
// (src/torch_hook/torch_state.cc), TF's tf.config.threading setting
// (python/magneton/recorders/tf_state.py; 0 is TF's default, every CPU).
constexpr const char* kIntraOpThreadKeys[] = {"torch.num_threads",
                                              "tf.config.threading.intra_op_parallelism_threads"};

}  // namespace

int OpThreadsOf(const Trace& trace) {
  int most = 0;
  for (const auto& state : trace.runtime_states) {
    for (const char* key : kIntraOpThreadKeys) {
      auto it = state.values.find(key);
      if (it == state.values.end()) continue;
      char* end = nullptr;
      const long n = std::strtol(it->second.c_str(), &end, 10);
      if (end == it->second.c_str() || *end != '\0' || n < 0) continue;
      if (n == 0) return 0;  // the framework's default: as many as the machine gives it
      most = std::max(most, static_cast<int>(std::min(n, 4096L)));
    }
  }
  return most;
}

}  // namespace magneton::detect
