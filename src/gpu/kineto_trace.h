// torch.profiler's trace file (`prof.export_chrome_trace(path)`, written by
// Kineto): Chrome trace-event JSON whose GPU events come from CUPTI.
// docs/TRACE_FORMAT.md "Device activities" lists the fields read.
#pragma once

#include <string>
#include <string_view>

#include "gpu/activity.h"
#include "magneton/status.h"

namespace magneton::gpu {

// The events a batch uses: "kernel", "gpu_memcpy", "gpu_memset" (device
// work), "cuda_runtime" / "cuda_driver" (launches) and "cpu_op" /
// "user_annotation" (host ops), all complete events (ph "X"), timestamps in
// µs after `baseTimeNanoseconds` (0 when absent: older Kineto wrote absolute
// µs). Everything else is skipped. A file that is not such JSON is an error;
// a used event that is malformed is dropped and counted in `dropped`.
StatusOr<ActivityBatch> ParseKinetoTrace(std::string_view json_text);

// A Kineto trace file as an activity source (read at Collect()).
class KinetoTraceSource final : public ActivitySource {
 public:
  explicit KinetoTraceSource(std::string path) : path_(std::move(path)) {}
  std::string_view name() const override { return "kineto"; }
  StatusOr<ActivityBatch> Collect() override;

 private:
  std::string path_;
};

}  // namespace magneton::gpu
