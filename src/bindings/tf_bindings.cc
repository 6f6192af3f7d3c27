#include "bindings/tf_bindings.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "bindings/status_exception.h"
#include "magneton/recorder.h"
#include "record/tf_profile.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace magneton {

void RegisterTfBindings(nb::module_& m) {
  m.def(
      "ingest_tf_profile",
      [](const nb::bytes& trace_json) {
        std::map<std::string, int64_t> out;
        Recorder::Ref rec;
        if (!rec) return out;
        const std::string_view text(static_cast<const char*>(trace_json.data()), trace_json.size());
        StatusOr<TfIngestStats> stats = [&] {
          nb::gil_scoped_release release;
          return IngestTfProfile(*rec, text);
        }();
        if (!stats.ok()) {
          rec->SetMeta("tf.profile.error", stats.status().message());
          ThrowStatus(stats.status());
        }
        out["calls"] = stats->calls;
        out["calls_linked"] = stats->calls_linked;
        out["nodes"] = stats->nodes;
        out["ops"] = stats->nodes_written;
        out["nodes_unlinked"] = stats->nodes_unlinked;
        out["clock_paired"] = stats->clock_paired;
        return out;
      },
      "trace_json"_a,
      "Nests the graph nodes TF's executor ran (TF's profile as trace-event JSON, xspace_to_tools_data's "
      "\"trace_viewer@\") in the recorded tf::function:<f> ops of their calls, as tf::<OpType> ops without tensors.");
}

}  // namespace magneton
