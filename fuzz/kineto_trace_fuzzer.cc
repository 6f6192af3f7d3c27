// libFuzzer target: the torch.profiler / Kineto trace parser
// (src/gpu/kineto_trace.cc), then the clock mapping and the link over ops
// made from the parsed host ops (what a recording of the same program
// would hold), some of them CUDA graph capture and replay ops. Arbitrary bytes must give a Status or a linked batch, never a
// crash, hang or sanitizer report.
//   ninja -C build/fuzz kineto_trace_fuzzer
//   build/fuzz/fuzz/kineto_trace_fuzzer -max_total_time=60 fuzz/corpus/kineto_trace
#include <cstddef>
#include <cstdint>
#include <string>
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
                   i > 0 ? static_cast<int64_t>(i / 2) : magneton::kNoId, i, ""});
    // Some ops as the recorder's CUDA graph capture and replay ops, so the
    // graph link (gpu/graph_link.cc) runs over whatever the input holds.
    if (i % 7 == 3 || i % 7 == 5) {
      ops.back().name = i % 7 == 3 ? magneton::gpu::kGraphCaptureOp : magneton::gpu::kGraphReplayOp;
      ops.back().recorder_args = "{\"graph\":" + std::to_string(i % 3) + "}";
    }
  }
  magneton::gpu::AlignOptions options;
  options.priors = {{"monotonic", 0, 0}};
  (void)magneton::gpu::LinkActivities(*batch, ops, options);
  return 0;
}
