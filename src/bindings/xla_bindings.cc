#include "bindings/xla_bindings.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/status_exception.h"
#include "magneton/recorder.h"
#include "record/xla_profile.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace magneton {

void RegisterXlaBindings(nb::module_& m) {
  m.def(
      "ingest_xla_profile",
      [](const nb::bytes& trace_json, const std::vector<std::string>& hlo_texts) {
        std::map<std::string, int64_t> out;
        Recorder::Ref rec;
        if (!rec) return out;
        const std::string_view text(static_cast<const char*>(trace_json.data()), trace_json.size());
        StatusOr<XlaIngestStats> stats = [&] {
          nb::gil_scoped_release release;
          return IngestXlaProfile(*rec, text, hlo_texts);
        }();
        if (!stats.ok()) {
          rec->SetMeta("xla.error", stats.status().message());
          ThrowStatus(stats.status());
        }
        out["runs"] = stats->runs;
        out["runs_linked"] = stats->runs_linked;
        out["ops"] = stats->ops_written;
        out["ops_with_source"] = stats->ops_with_source;
        out["clock_paired"] = stats->clock_paired;
        return out;
      },
      "trace_json"_a, "hlo_texts"_a,
      "Nests XLA's thunk executions (the perfetto_trace.json that jax.profiler wrote) under the recorded ops that "
      "ran them, as xla::<hlo_op> ops; hlo_texts: the optimised HLO modules (compiled.as_text()).");
}

}  // namespace magneton
