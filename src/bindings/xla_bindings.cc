#include "bindings/xla_bindings.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/status_exception.h"
#include "magneton/recorder.h"
#include "fingerprint/fingerprint.h"
#include "pyhooks/array_view.h"
#include "record/xla_profile.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace magneton {
namespace {

// [(op_id, hlo_module, [(op_name, "file:line", array), ...]), ...] from the
// replay (recorders/jax_jit_values.py): each array fingerprinted as the
// recorder fingerprints a JAX or NumPy array (ArrayToView, then
// Recorder::EncodeValueFingerprint), never kept.
std::vector<XlaReplay> ReadReplays(nb::handle replays) {
  std::vector<XlaReplay> out;
  if (!replays.is_valid() || replays.is_none()) return out;
  for (nb::handle call : replays) {
    auto t = nb::cast<nb::tuple>(call);
    XlaReplay r;
    r.op_id = nb::cast<int64_t>(t[0]);
    r.module = nb::cast<std::string>(t[1]);
    for (nb::handle item : t[2]) {
      auto v = nb::cast<nb::tuple>(item);
      XlaReplayValue value;
      value.op_name = nb::cast<std::string>(v[0]);
      value.source = nb::cast<std::string>(v[1]);
      ArrayView view;
      if (!ArrayToView(v[2].ptr(), /*with_host_data=*/true, /*block=*/true, &view)) continue;
      value.shape = view.sizes;
      value.dtype = view.dtype;
      auto dtype = ParseDType(view.dtype);
      if (dtype.ok() && view.view.host_data) {
        TensorBuffer buffer;
        buffer.data = view.view.host_data;
        buffer.dtype = *dtype;
        buffer.shape = view.sizes;
        buffer.strides = view.strides;
        auto fp = Recorder::EncodeValueFingerprint(buffer);
        if (fp.ok()) value.fingerprint = std::move(fp).value();
      }
      r.values.push_back(std::move(value));
    }
    if (t.size() > 3 && !t[3].is_none()) {
      for (nb::handle slot : t[3]) r.input_slots.push_back(nb::cast<int64_t>(slot));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

void RegisterXlaBindings(nb::module_& m) {
  m.def(
      "ingest_xla_profile",
      [](const nb::bytes& trace_json, const std::vector<std::string>& hlo_texts, nb::handle replays) {
        std::map<std::string, int64_t> out;
        Recorder::Ref rec;
        if (!rec) return out;
        const std::vector<XlaReplay> values = ReadReplays(replays);
        const std::string_view text(static_cast<const char*>(trace_json.data()), trace_json.size());
        StatusOr<XlaIngestStats> stats = [&] {
          nb::gil_scoped_release release;
          return IngestXlaProfile(*rec, text, hlo_texts, values);
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
        out["values_calls"] = stats->values.calls;
        out["values_ops"] = stats->values.ops_with_values;
        return out;
      },
      "trace_json"_a, "hlo_texts"_a, "replays"_a = nb::none(),
      "Nests XLA's thunk executions (the perfetto_trace.json that jax.profiler wrote) under the recorded ops that "
      "ran them, as xla::<hlo_op> ops; hlo_texts: the optimised HLO modules (compiled.as_text()); replays (--values): "
      "[(op_id, hlo_module, [(op_name, 'file:line', array), ...], input_slots or None)], each equation's output of a call replayed "
      "on its inputs, fingerprinted and linked to the call's thunks (record/xla_values.h).");
}

}  // namespace magneton
