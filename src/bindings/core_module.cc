// magneton._core: the Python edge of the recording core (what a traced
// process loads; the analysis is magneton._analysis). No logic of its own: it
// converts arguments, calls the core and turns a bad Status into an exception.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/gpu_bindings.h"
#include "bindings/ort_bindings.h"
#include "bindings/array_ops.h"
#include "bindings/xla_bindings.h"
#include "bindings/tf_bindings.h"
#include "bindings/status_exception.h"
#include "magneton/recorder.h"
#include "record/env_reads.h"
#include "pyhooks/python_stack.h"
#include "trace/line_trace_file.h"
#include "trace/rerun_plan.h"
#include "trace/redact.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using magneton::ThrowIfError;

// Runs f on the active recorder, held for the call: a stop on another
// Python thread (it runs without the GIL) waits for it instead of freeing it.
template <typename F>
auto WithActive(F&& f) {
  magneton::Recorder::Ref rec;
  if (!rec) throw std::runtime_error("no Magneton recording is active");
  return f(*rec);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Magneton's C++ core";

  m.def("start_recording",
        [](const std::string& path, const std::string& label, const std::string& command_line,
           const std::string& engine, const std::map<std::string, std::string>& versions, bool energy, bool values,
           const std::string& rerun_plan) {
          magneton::RunMetadata meta;
          meta.label = label;
          meta.command_line = command_line;
          // The re-run plan (JSON, trace/rerun_plan.h): the recorder redacts,
          // stores and signs it, and derives the command line from it.
          if (!rerun_plan.empty()) meta.extra[magneton::kRerunPlanKey] = rerun_plan;
          meta.engine = engine;
          meta.versions = versions;
          magneton::RecorderOptions options;
          options.sample_energy = energy;
          options.record_values = values;
          ThrowIfError(magneton::Recorder::Start(path, meta, options));
        },
        "path"_a, "label"_a, "command_line"_a, "engine"_a = "pytorch",
        "versions"_a = std::map<std::string, std::string>{}, "energy"_a = true,
        "values"_a = false, "rerun_plan"_a = "");
  m.def("stop_recording", [] { ThrowIfError(magneton::Recorder::Stop()); },
        nb::call_guard<nb::gil_scoped_release>());
  m.def("is_recording", [] { return magneton::Recorder::IsRecording(); });
  // Windowed recording (include/magneton/recorder.h, ConfigureWindow).
  m.def("configure_window",
        [](const std::string& schedule, bool time_gate_open) {
          ThrowIfError(WithActive([&](magneton::Recorder& r) { return r.ConfigureWindow(schedule, time_gate_open); }));
        },
        "schedule"_a, "time_gate_open"_a = true,
        "schedule: 'wait,warmup,active[,repeat]' in steps, or '' for every step.");
  m.def("window_step",
        [](bool explicit_call) -> bool {
          magneton::Recorder::Ref rec;
          return rec ? rec->Step(explicit_call) : false;
        },
        "explicit_call"_a = true, "A step boundary; returns whether the window is open after it.");
  m.def("set_time_gate",
        [](bool open) -> bool {
          magneton::Recorder::Ref rec;
          return rec ? rec->SetTimeGate(open) : false;
        },
        "open"_a);
  m.def("recording_open", [] {
    magneton::Recorder::Ref rec;
    return rec && rec->WindowOpen();
  }, "Whether a recording is active and its window open.");
  m.def("record_values", [] {
    magneton::Recorder::Ref rec;
    return rec && rec->record_values();
  }, "Whether the active recording fingerprints values (record --values).");
  m.def("flush", [] { ThrowIfError(WithActive([](magneton::Recorder& r) { return r.Flush(); })); },
        nb::call_guard<nb::gil_scoped_release>());
  m.def("ops_recorded", [] { return WithActive([](magneton::Recorder& r) { return r.ops_recorded(); }); });

  m.def("push_scope", [](std::string_view name, std::string_view type) {
    if (magneton::Recorder::Ref rec; rec) rec->PushScope(name, type);
  });
  m.def("pop_scope", [] {
    if (magneton::Recorder::Ref rec; rec) rec->PopScope();
  });
  m.def("set_config", [](std::string key, std::string value, std::string source) {
    WithActive([&](magneton::Recorder& r) { r.SetConfig(std::move(key), std::move(value), std::move(source)); });
  }, "key"_a, "value"_a, "source"_a);
  m.def("set_meta", [](const std::string& key, const std::string& value) {
    WithActive([&](magneton::Recorder& r) { r.SetMeta(key, value); });
  });
  m.def("intern_runtime_state", [](const std::map<std::string, std::string>& values) {
    return WithActive([&](magneton::Recorder& r) { return r.InternRuntimeState(values); });
  }, "values"_a, "The id of the runtime state with exactly these values (Trace::runtime_states).");
  m.def("set_thread_state_id", [](int64_t id) {
    if (magneton::Recorder::Ref rec; rec) rec->SetThreadStateId(id);
  }, "state_id"_a, "The runtime state the ops this thread begins from now on run under.");
  m.def("add_state_setter", [](std::string key, std::string value, std::string where) {
    if (magneton::Recorder::Ref rec; rec) {
      magneton::StateSetter s;
      s.key = std::move(key);
      s.value = std::move(value);
      s.where = std::move(where);
      rec->AddStateSetter(std::move(s));
    }
  }, "key"_a, "value"_a, "where"_a, "A call that set a runtime state key, at file:line:function.");
  m.def("native_env_names_read", []() -> nb::object {
    auto read = magneton::NativeEnvNamesRead();
    if (!read) return nb::none();
    return nb::make_tuple(read->names, read->dropped);
  }, "(names, dropped) that native code read through getenv, or None without the preloaded interposer.");
  // The trace writer redacts on its own; these let Python glue apply the same
  // rule to values it nests under other names (a dict of call kwargs).
  m.def("is_secret_name", [](std::string_view name) { return magneton::IsSecretName(name); }, "name"_a,
        "Whether a config/env/argument name looks like it holds a secret (trace/redact.h).");
  m.attr("REDACTED") = std::string(magneton::kRedacted);
  m.def("redact", [](std::string_view name, std::string value) { return magneton::RedactIfSecret(name, std::move(value)); },
        "name"_a, "value"_a,
        "The value as a trace may store it: redacted whole under a secret-looking name, else with the secrets "
        "inside it (URL credentials, token-shaped words) replaced (trace/redact.h).");
  m.def("add_module_call_code", [](nb::object code) { magneton::AddModuleCallCode(code.ptr()); },
        "Frames running this code object are module calls; their first local is the module.");
  m.def("set_scope_namer", [](nb::object namer) { magneton::SetScopeNamer(namer.is_none() ? nullptr : namer.ptr()); },
        "namer(parent_or_None, module) -> str names module scopes (called once per new stack); or "
        "(str, construction frames [(file, line, function), ...] outermost first, constructor args JSON) for a "
        "module whose construction the recorder saw.");
  m.def("clear_module_scopes", [] { magneton::ClearModuleScopes(); });

  magneton::RegisterArrayOps(m);
  magneton::RegisterXlaBindings(m);
  magneton::RegisterTfBindings(m);

  magneton::RegisterOrtBindings(m);
  magneton::RegisterGpuBindings(m);
  // Line tracing for `magneton diff` re-runs (python/magneton/line_trace.py).
  using Watched = std::tuple<size_t, std::string, std::string>;
  using Call = std::tuple<int, std::vector<int64_t>, std::vector<Watched>>;
  m.def("write_line_trace", [](const std::string& path,
                               const std::vector<std::tuple<std::string, std::string, int64_t>>& targets,
                               const std::vector<Call>& calls) {
    magneton::LineTrace t;
    for (const auto& [file, function, line] : targets) t.targets.push_back({file, function, line});
    for (const auto& [target, lines, values] : calls) {
      magneton::LineCall c{target, lines, {}};
      for (const auto& [event, expr, value] : values) c.values.push_back({event, expr, value});
      t.calls.push_back(std::move(c));
    }
    ThrowIfError(magneton::WriteLineTrace(path, t));
  }, "path"_a, "targets"_a, "calls"_a);
}
