#include "bindings/gpu_bindings.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <optional>
#include <tuple>

#include "base/clock.h"
#include "bindings/status_exception.h"
#include "gpu/kineto_trace.h"
#include "record/device_ingest.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace magneton {

void RegisterGpuBindings(nb::module_& m) {
  m.def("measure_realtime_offset", [] {
    const RealtimeOffset o = MeasureRealtimeOffset();
    return std::make_tuple(o.realtime_minus_monotonic_ns, o.uncertainty_ns);
  }, "(CLOCK_REALTIME - CLOCK_MONOTONIC, uncertainty) in ns, read the way every ingest reads it.");

  using Reading = std::optional<std::tuple<int64_t, int64_t>>;
  m.def("ingest_kineto_trace", [](const std::string& path, Reading start, Reading stop) {
    Recorder::Ref rec;
    if (!rec) throw std::runtime_error("no Magneton recording is active");
    DeviceClockBracket bracket;
    if (start && stop) {
      bracket.known = true;
      bracket.start = {std::get<0>(*start), std::get<1>(*start)};
      bracket.stop = {std::get<0>(*stop), std::get<1>(*stop)};
    }
    gpu::KinetoTraceSource source(path);
    auto stats = IngestDeviceActivities(*rec, source, bracket);
    ThrowIfError(stats.status());
    std::map<std::string, int64_t> out = {
        {"activities", static_cast<int64_t>(stats->activities)},
        {"linked_by_host_op", static_cast<int64_t>(stats->by_host_op)},
        {"linked_by_launch_time", static_cast<int64_t>(stats->by_launch_time)},
        {"unlinked", static_cast<int64_t>(stats->unlinked)},
        {"clock_error_ns", stats->clock.error_ns},
    };
    return out;
  }, "path"_a, "start"_a = nb::none(), "stop"_a = nb::none(),
     "Ingests torch.profiler's exported trace into the active recording: device activities on the op clock, "
     "linked to the recorded ops that launched them. start/stop: measure_realtime_offset() readings taken when "
     "the profiler started and stopped.");
}

}  // namespace magneton
