"""ONNX Runtime hooks. Every ``InferenceSession`` created while recording runs
with ORT's own profiler and saves the graph as ORT optimised it; ``run()`` is
bracketed with clock readings (and, with ``values``, a second run of the
optimised graph with every intermediate exposed, whose arrays are
fingerprinted in C++ and dropped). At ``stop()`` the C++ core
(``_core.OrtSession``, src/ort/) turns profile + graph into ops, tensors and
edges. This file only collects inputs; see docs/ARCHITECTURE.md ("ONNX Runtime").
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
import threading
import weakref

from magneton import _core
from magneton import config_snapshot
from magneton.recorders import ort_node_names
from magneton.recorders.base import Capabilities, Recorder, RecordOptions

_ONNX_MISSING = ("magneton needs the `onnx` package to record ONNX Runtime sessions: "
                 "pip install 'magneton[ort]' (or pip install onnx)")

# Options magneton sets on the user's SessionOptions for the constructor
# (restored right after): the state shows the user's values.
_MAGNETON_SET = ("enable_profiling", "profile_file_prefix", "optimized_model_filepath")


def option_attrs(options) -> list[str]:
    """Every setting an ONNX Runtime options object exposes (SessionOptions,
    RunOptions): its class's public properties, whatever this ORT defines."""
    cls = type(options)
    return sorted(a for a in dir(cls) if not a.startswith("_") and isinstance(getattr(cls, a, None), property))


def _state_text(value) -> str:
    return value if isinstance(value, str) else repr(value) if isinstance(value, (bool, int)) else str(value)


class _Session:
    """What one recorded session needs at stop(): the C++ accumulator, where
    the profile and the optimised model are, and the values model."""

    def __init__(self, index, session, core, prefix, optimized_path, own_optimized, renamed_nodes, data_dir):
        self.index = index
        self.renamed_nodes = renamed_nodes
        self.data_dir = data_dir  # the folder the model's external data paths are relative to
        self.values_error = None
        self.session = weakref.ref(session)
        self.core = core
        self.prefix = prefix
        self.optimized_path = optimized_path
        self.own_optimized = own_optimized
        self.providers = session.get_providers()
        self.values_session = None
        self.state_id = -1  # the session's runtime state (its options), stamped on its ops
        self.state: dict[str, str] = {}  # its values
        self.run_states: dict[tuple, int] = {}  # a run's RunOptions values -> the run's state id


class OrtRecorder(Recorder):
    name = "onnxruntime"
    framework = "onnxruntime"

    @classmethod
    def capabilities(cls) -> Capabilities:
        return Capabilities(
            ops="every graph node run (ONNX Runtime's own profiler, ingested at stop)",
            tensors="node inputs and outputs from the optimised model",
            values="fingerprints of the run's inputs and outputs with --values",
            runtime_state="every SessionOptions property, provider options, RunOptions and config entries",
            integration="Python wrappers of InferenceSession + profile ingest at stop")

    def __init__(self, options: RecordOptions | None = None):
        super().__init__(options)
        self._values = self.options.values
        self._ingested = 0
        self._sessions: list[_Session] = []
        self._config_entries: dict[int, tuple[object, dict]] = {}  # id(options) -> (options, entries)
        self._run_entries: dict[int, tuple[object, dict]] = {}  # id(run options) -> (run options, entries)
        self._default_run = None  # {key: value} of a default RunOptions
        self._dir = None
        self._internal = threading.local()  # set while magneton builds its own sessions

    # -- lifecycle -----------------------------------------------------------
    def engines(self) -> list[str]:
        return ["onnxruntime"] if self._ingested else []

    def install(self) -> None:
        self.when_imported("onnxruntime", self._patch)

    def uninstall(self) -> None:
        self.remove_import_hooks()
        self.restore_patches()
        failed = False
        if self._sessions and _core.is_recording():
            for s in self._sessions:
                ok = self._ingest(s)
                failed |= not ok
                self._ingested += ok
        self._sessions.clear()
        self._config_entries.clear()
        self._run_entries.clear()
        if self._dir and not failed:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _patch(self, ort) -> None:
        try:
            import onnx  # noqa: F401
        except ImportError:
            print(f"magneton: {_ONNX_MISSING}; ONNX Runtime sessions are not recorded", file=sys.stderr)
            return
        from onnxruntime.capi import onnxruntime_inference_collection as collection

        cls = collection.InferenceSession
        init, run = cls.__init__, cls.run
        add_entry = ort.SessionOptions.add_session_config_entry
        add_run_entry = ort.RunOptions.add_run_config_entry
        recorder = self

        def __init__(session, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
            if not _core.is_recording() or getattr(recorder._internal, "active", False):
                return init(session, path_or_bytes, sess_options, providers, provider_options, **kwargs)
            recorder._create(init, ort, session, path_or_bytes, sess_options, providers, provider_options, kwargs)

        def run_(session, output_names, input_feed, run_options=None):
            state = getattr(session, "_magneton_session", None)
            if state is None or not _core.is_recording():
                return run(session, output_names, input_feed, run_options)
            k = state.core.begin_run(recorder._run_state(ort, state, run_options))
            try:
                result = run(session, output_names, input_feed, run_options)
            finally:
                state.core.end_run(k)
            if recorder._values and state.values_error is None:
                try:
                    recorder._record_values(ort, state, k, input_feed)
                except Exception as exc:  # noqa: BLE001 - the user's run succeeded; only the values are lost
                    state.values_error = str(exc)
                    print(f"magneton: ONNX Runtime session {state.index}: values not recorded from run {k} on: "
                          f"{exc}", file=sys.stderr)
            return result

        def add_session_config_entry(options, key, value):
            add_entry(options, key, value)
            recorder._config_entries.setdefault(id(options), (options, {}))[1][key] = value

        def add_run_config_entry(options, key, value):
            add_run_entry(options, key, value)
            recorder._run_entries.setdefault(id(options), (options, {}))[1][key] = value

        for owner, attr, fn in ((cls, "__init__", __init__), (cls, "run", run_),
                                (ort.SessionOptions, "add_session_config_entry", add_session_config_entry),
                                (ort.RunOptions, "add_run_config_entry", add_run_config_entry)):
            self.patch(owner, attr, fn)

    # -- sessions ------------------------------------------------------------
    def _create(self, init, ort, session, path_or_bytes, sess_options, providers, provider_options, kwargs):
        import onnx
        from google.protobuf import json_format

        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="magneton-ort-")
        index = len(self._sessions)
        options = sess_options if sess_options is not None else ort.SessionOptions()
        saved = (options.enable_profiling, options.profile_file_prefix, options.optimized_model_filepath)
        prefix = os.path.join(self._dir, f"session{index}")
        # The profile links events to nodes by name: every node needs a unique one.
        naming_error = None
        try:
            model, renamed = ort_node_names.prepare(path_or_bytes)
        except Exception as exc:  # noqa: BLE001 - said below once ORT accepted the model
            model, renamed, naming_error = path_or_bytes, 0, exc
        own_optimized = not saved[2]
        optimized = saved[2] or prefix + "_optimized.onnx"
        # The user's options are changed only for the constructor (ORT copies
        # them into the session) and restored right after.
        options.enable_profiling = True
        options.profile_file_prefix = prefix
        options.optimized_model_filepath = optimized
        try:
            init(session, model, options, providers, provider_options, **kwargs)
        finally:
            options.enable_profiling, options.profile_file_prefix, options.optimized_model_filepath = saved
        if naming_error is not None:
            print(f"magneton: ONNX Runtime session {index}: cannot give its nodes unique names ({naming_error}); "
                  "ops of unnamed nodes will have no tensors", file=sys.stderr)
        start_ns = session.get_profiling_start_time_ns()
        graph = onnx.load(optimized, load_external_data=False).graph
        for tensor in graph.initializer:  # C++ needs names, types and dims, not the weights
            tensor.ClearField("raw_data")
        core = _core.OrtSession(json_format.MessageToJson(graph), start_ns)
        # ORT resolves external data against the model file's folder (the
        # working directory for bytes); the optimised model keeps those paths.
        data_dir = os.getcwd() if isinstance(model, bytes) else os.path.dirname(os.path.abspath(model))
        state = _Session(index, session, core, prefix, optimized, own_optimized, renamed, data_dir)
        session._magneton_session = state
        self._sessions.append(state)
        self._record_config(index, session, options, saved)

    def _record_config(self, index, session, options, saved) -> None:
        base = "ort.session" if index == 0 else f"ort.session{index}"
        used = session.get_session_options()
        # The same settings as the runtime state of the session's ops, under
        # index-free keys ("ort.intra_op_num_threads"): each session's ops
        # carry their own session's (docs/TRACE_FORMAT.md, "Runtime state").
        # Every SessionOptions property, the config entries the program
        # added, the providers and each provider's options.
        state: dict[str, str] = {}
        for attr in option_attrs(used):
            try:
                value = getattr(used, attr)
            except Exception as exc:  # noqa: BLE001 - a property this build cannot read
                value = f"<unavailable: {type(exc).__name__}>"
            if attr in _MAGNETON_SET:
                value = saved[_MAGNETON_SET.index(attr)]  # as the user set it: magneton's profiling is not a choice
            value = value if isinstance(value, (bool, int, str)) else str(value)
            config_snapshot._set(f"{base}.{attr}", value, "runtime")
            state[f"ort.{attr}"] = _state_text(value)
        for key, value in sorted(self._config_entries.get(id(options), (None, {}))[1].items()):
            config_snapshot._set(f"{base}.config.{key}", value, "runtime")
            state[f"ort.config.{key}"] = str(value)
        config_snapshot._set(f"{base}.providers", session.get_providers(), "runtime")
        provider_options = session.get_provider_options()
        config_snapshot._set(f"{base}.provider_options", provider_options, "runtime")
        state["ort.providers"] = ",".join(session.get_providers())
        for provider, values in sorted(provider_options.items()):
            for key, value in sorted(values.items()):
                state[f"ort.provider_options.{provider}.{key}"] = str(value)
        s = self._sessions[index]
        s.state = state
        s.state_id = _core.intern_runtime_state({**state, **self._run_values(sys.modules["onnxruntime"], None)})

    def _run_values(self, ort, run_options) -> dict[str, str]:
        """A run's RunOptions as runtime state: every property ("ort.run.terminate")
        and the config entries the program added ("ort.run.config.<key>")."""
        if run_options is None:
            if self._default_run is None:
                self._default_run = self._run_values(ort, ort.RunOptions())
            return self._default_run
        values = {}
        for attr in option_attrs(run_options):
            try:
                values[f"ort.run.{attr}"] = _state_text(getattr(run_options, attr))
            except Exception:  # noqa: BLE001 - a property this build cannot read
                continue
        for key, value in sorted(self._run_entries.get(id(run_options), (None, {}))[1].items()):
            values[f"ort.run.config.{key}"] = str(value)
        return values

    def _run_state(self, ort, session: _Session, run_options) -> int:
        """The state id of a run: its session's options and this run's RunOptions."""
        try:
            run = self._run_values(ort, run_options)
        except Exception:  # noqa: BLE001 - the run itself says what is wrong with its options
            return session.state_id
        key = tuple(sorted(run.items()))
        state_id = session.run_states.get(key)
        if state_id is None:
            state_id = session.run_states[key] = _core.intern_runtime_state({**session.state, **run})
        return state_id

    # -- values ----------------------------------------------------------------
    def _record_values(self, ort, state, run_index, input_feed) -> None:
        if state.values_session is None:
            import onnx

            model = onnx.load(state.optimized_path, load_external_data=False)
            have = {o.name for o in model.graph.output}
            model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in state.core.value_names() if n not in have)
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # run it as optimised
            # Weights stay where they are (no copy in memory): external data
            # is read from the folder the recorded session read it from.
            options.add_session_config_entry("session.model_external_initializers_file_folder_path", state.data_dir)
            self._config_entries.pop(id(options), None)  # magneton's session, not the user's config
            self._internal.active = True
            try:
                state.values_session = ort.InferenceSession(model.SerializeToString(), options,
                                                            providers=state.providers)
            finally:
                self._internal.active = False
        names = [o.name for o in state.values_session.get_outputs()]
        outputs = state.values_session.run(None, input_feed)
        state.core.add_values(run_index, names, outputs)
        state.core.add_values(run_index, list(input_feed.keys()), list(input_feed.values()))

    # -- ingestion at stop() -----------------------------------------------------
    def _ingest(self, state: _Session) -> bool:
        key = "ort.session" if state.index == 0 else f"ort.session{state.index}"
        session = state.session()
        try:
            if session is not None:
                path = session.end_profiling()
            else:  # ORT wrote the profile when the session was destroyed
                found = sorted(glob.glob(state.prefix + "_*.json"))
                if not found:
                    raise RuntimeError(f"no profile file {state.prefix}_*.json (session destroyed without one)")
                path = found[-1]
            stats = state.core.ingest(path, state.state_id)
        except Exception as exc:  # noqa: BLE001 - reported, the rest of the trace is kept
            _core.set_meta(key + ".error", str(exc))
            print(f"magneton: ONNX Runtime session {state.index} not recorded: {exc} "
                  f"(profile and model kept in {self._dir})", file=sys.stderr)
            return False
        stats["renamed_nodes"] = state.renamed_nodes
        if state.values_error is not None:
            stats["values_error"] = state.values_error
        for name, value in stats.items():
            _core.set_meta(f"{key}.{name}", str(value))
        if stats["ops_without_tensors"]:
            # match and diff see such ops as isolated work: never degrade silently.
            print(f"magneton: ONNX Runtime session {state.index}: {stats['ops_without_tensors']} of {stats['ops']} "
                  f"ops have no tensors ({stats['unknown_nodes']} profile events name no graph node, "
                  f"{stats['ambiguous_nodes']} name several); match and diff cannot follow their dataflow",
                  file=sys.stderr)
        return True
