// libFuzzer target: the torch.profiler / Kineto trace parser
// (src/gpu/kineto_trace.cc), then the clock mapping and the link over ops
// made from the parsed host ops (what a recording of the same program
// would hold). Arbitrary bytes must give a Status or a linked batch, never a
// crash, hang or sanitizer report.
//   ninja -C build/fuzz kineto_trace_fuzzer
//   build/fuzz/fuzz/kineto_trace_fuzzer -max_total_time=60 fuzz/corpus/kineto_trace
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpu/kineto_trace.h"
#include "gpu/link.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto batch = magneton::gpu::ParseKinetoTrace(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!batch.ok()) return 0;
  std::vector<magneton::OpSpan> ops;
  for (size_t i = 0; i < batch->host_ops.size() && i < 4096; ++i) {
    const auto& h = batch->host_ops[i];
    ops.push_back({static_cast<int64_t>(i), h.name, h.thread_id, h.start_ns - 1000, h.end_ns - 1000,
                   i > 0 ? static_cast<int64_t>(i / 2) : magneton::kNoId, i});
  }
  magneton::gpu::AlignOptions options;
  options.priors = {{"monotonic", 0, 0}};
  (void)magneton::gpu::LinkActivities(*batch, ops, options);
  return 0;
}
