"""JAX hooks. Jit mode, the default, keeps jit on: jitted calls are recorded
by jax_jit_recorder.py, and the eval-trace hook below records the primitives
bound eagerly outside any jit. Eager mode (MAGNETON_JAX_MODE=eager): while
recording, jit is disabled (``jax_disable_jit``), so jitted
functions (the user's and JAX's own, e.g. ``jax.scipy.linalg.expm``) run their
Python body and every primitive is bound on JAX's eval trace, one XLA dispatch
each. ``EvalTrace.process_primitive`` is wrapped to announce each of those to
the C++ recorder (``_core.begin_array_op``/``end_array_op``), which converts the
input and output arrays, walks the Python stack for the call path and, with
``--values``, fingerprints the buffers.

What this records is JAX's op-by-op execution, not the fused program XLA
builds under ``jit``: per-op times are eager-dispatch times (docs/JAX.md).
Every op either mode records carries the jax.config values in effect."""

from __future__ import annotations

import os
import sys
import threading

from magneton import _core
from magneton import call_site
from magneton import config_snapshot
from magneton.recorders import jax_jit_recorder
from magneton.recorders.base import Capabilities, Recorder, RecordOptions

# Call-like primitives whose eval rule re-binds the primitives of their body:
# not ops of their own, so the body's primitives are recorded one by one.
_TRANSPARENT = frozenset({"closed_call", "core_call", "checkpoint", "remat", "custom_jvp_call",
                          "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin", "custom_linear_solve",
                          # PRNG key ops run the key implementation's primitives (threefry)
                          "random_seed", "random_split", "random_fold_in", "random_bits", "remat2"})
# A jitted call bound on the eval trace despite disable_jit: its jaxpr is
# evaluated here, equation by equation, inside a scope named after it.
_INTERPRETED = frozenset({"jit", "pjit"})

# Bumped by each jax.config.update and each config context manager the
# program enters or leaves: with JAX's trace context (which holds only the
# flags in the jit key) it tells the state stamper when to re-read every
# jax.config option.
_config_changes = [0]

# .busy while a recorded op runs on this thread: what JAX binds or calls
# inside it (a primitive's own single-op jit) belongs to that op. Shared with
# the jit-mode hooks (jax_jit_recorder.py).
_busy = threading.local()


class JaxRecorder(Recorder):
    name = "jax"
    framework = "jax"

    @classmethod
    def capabilities(cls) -> Capabilities:
        return Capabilities(
            ops="each jitted call, with XLA's thunks (HLO ops, fusions) nested from jax.profiler; eager "
                "primitives outside jit; --jax-mode eager: every primitive with jit off",
            tensors="call (executable) and primitive inputs and outputs",
            values="fingerprints at executable boundaries and of eager primitives with --values",
            runtime_state="every jax.config option",
            compiled="jit as it runs: jax::compile regions, HLO metadata (primitives, source lines) per XLA op",
            integration="Python hooks (jitted-call path, EvalTrace) + magneton._core array ops; the XLA "
                        "profile ingested in C++ at stop")

    def __init__(self, options: RecordOptions | None = None):
        super().__init__(options)
        self._trace_cls = None
        self._orig_process = None
        self._prev_disable_jit = None
        self._orig_update = None
        self._orig_context = None  # StateContextManager's (__enter__, __exit__)
        self._jit = None  # jit mode's hooks (jax_jit_recorder.JitRecording)
        self._primitive_names: dict[str, str] = {}  # the eager primitives recorded
        self.hooked = False

    def engines(self) -> list[str]:
        # Hooked is not enough: Keras and others import jax without running it.
        ran = self._primitive_names or (self._jit is not None and self._jit.call_names)
        return ["jax"] if self.hooked and ran else []

    def install(self) -> None:
        self.when_imported("jax", lambda _m: self._install_jax())

    def uninstall(self) -> None:
        self.remove_import_hooks()
        if self._jit is not None:
            self._jit.uninstall()  # before the recording stops: XLA's profile is ingested into it
            self._jit = None
        if self._orig_process is not None:
            self._trace_cls.process_primitive = self._orig_process
            self._orig_process = None
        if self._orig_update is not None:
            import jax

            del jax.config.update  # the class's method again
            self._orig_update = None
        if self._orig_context is not None:
            from jax._src import config as jax_config

            jax_config.StateContextManager.__enter__, jax_config.StateContextManager.__exit__ = self._orig_context
            self._orig_context = None
        if self._prev_disable_jit is not None:
            import jax

            jax.config.update("jax_disable_jit", self._prev_disable_jit)
            self._prev_disable_jit = None

    def _install_jax(self) -> None:
        import jax
        import jaxlib
        from jax._src import config as jax_config
        from jax._src import core, source_info_util

        if not _core.is_recording():
            return
        config_snapshot.record_jax_flags()  # before disable_jit is forced below
        # Call paths keep the user's line and the JAX API it called
        # (jax/_src/scipy/linalg.py:expm, jax/_src/numpy/...), not JAX's
        # dispatch machinery (tracing, jit wrappers, bind).
        jax_src = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "_src") + os.sep
        for part in _JAX_DISPATCH_PATHS:
            _core.add_skipped_code_path(jax_src + part)
        _core.add_skipped_code_path(os.path.dirname(os.path.abspath(jaxlib.__file__)) + os.sep)
        # The hooks' own frames (skipped by name only where the package is
        # installed as python/magneton or site-packages/magneton).
        _core.add_skipped_code_path(os.path.dirname(os.path.abspath(__file__)) + os.sep + "jax_")
        jit_mode = jax_jit_recorder.mode() == "jit"
        _core.set_meta("jax.mode", "jit" if jit_mode else "eager")
        if not jit_mode:  # MAGNETON_JAX_MODE=eager: every primitive on its own, docs/JAX.md
            self._prev_disable_jit = bool(jax.config.jax_disable_jit)
            jax.config.update("jax_disable_jit", True)
        self._wrap_config_update(jax)
        self._wrap_config_contexts(jax, jax_config)
        if jit_mode:
            self._jit = jax_jit_recorder.JitRecording(_busy, _make_state_stamper(jax_config))
        self._trace_cls = core.EvalTrace
        self._orig_process = core.EvalTrace.process_primitive
        self._trace_cls.process_primitive = _make_process_primitive(
            self._orig_process, core, source_info_util, jax_config, jit_mode, self._primitive_names,
            self._jit.flush if self._jit is not None else None)
        if self._jit is not None:
            self._jit.install(jax)
        self.hooked = True


    def _wrap_config_update(self, jax) -> None:
        """jax.config.update(name, value) calls record where the program set a
        flag (a StateSetter "jax.<name>"); the ops carry the values themselves."""
        original = jax.config.update
        skip = call_site.library_dirs(os.path.dirname(os.path.abspath(jax.__file__)) + os.sep)

        def update(name, value):
            result = original(name, value)
            _config_changes[0] += 1
            if _core.is_recording():
                _core.add_state_setter("jax." + str(name), str(value), call_site.user_site(skip))
            return result

        jax.config.update = update  # on the instance: uninstall deletes it
        self._orig_update = original

    def _wrap_config_contexts(self, jax, jax_config) -> None:
        """Every config option's context manager (``with jax.default_matmul_precision("float32")``,
        ``jax.log_compiles(True)``, any option JAX defines as a State): the
        program's enter records a StateSetter at its line, and its enter and
        exit make the ops re-read jax.config. JAX's own uses (inside its
        dispatch) change nothing here: the flags they set that matter are in
        the trace context, which the stamper compares anyway."""
        cls = getattr(jax_config, "StateContextManager", None)
        if not isinstance(cls, type) or "__enter__" not in vars(cls) or "__exit__" not in vars(cls):
            return  # another JAX: config context managers are seen through the trace context only
        orig_enter, orig_exit = cls.__enter__, cls.__exit__
        jax_dir = os.path.dirname(os.path.abspath(jax.__file__)) + os.sep
        skip = call_site.library_dirs(jax_dir)
        entered: set[int] = set()  # the program's managers now entered (__slots__: no attribute of ours)

        def __enter__(self):
            result = orig_enter(self)
            if not sys._getframe(1).f_code.co_filename.startswith(jax_dir):
                entered.add(id(self))
                _config_changes[0] += 1
                if _core.is_recording():
                    name = getattr(self.state, "_name", None) or getattr(self.state, "name", "?")
                    _core.add_state_setter("jax." + str(name), str(self.new_val), call_site.user_site(skip))
            return result

        def __exit__(self, *exc):
            result = orig_exit(self, *exc)
            if id(self) in entered:
                entered.discard(id(self))
                _config_changes[0] += 1
            return result

        cls.__enter__, cls.__exit__ = __enter__, __exit__
        self._orig_context = (orig_enter, orig_exit)


# Modules under jax/_src that only route a call to a primitive (tracing, jit
# and pjit wrappers, bind, config, traceback filtering): left out of call
# paths. Everything else under jax/_src (numpy, scipy, nn, random, lax, ...)
# is the API the user called and stays.
_JAX_DISPATCH_PATHS = (
    "core.py", "interpreters" + os.sep, "pjit.py", "api.py", "api_util.py", "traceback_util.py", "linear_util.py",
    "dispatch.py", "profiler.py", "source_info_util.py", "config.py", "util.py", "deprecations.py", "tree_util.py",
    "dtypes.py", "sharding_impls.py", "mesh.py", "array.py", "xla_bridge.py", "compiler.py", "stages.py",
    "named_sharding.py", "typing.py", "effects.py", "custom_derivatives.py", "ad_util.py", "checkify.py",
)


def _make_warm_up(core, trace_context):
    """Runs an eager op once, outside the op, the first time each (primitive,
    params, argument types, config context) is seen: JAX compiles a small XLA program per
    primitive and signature, and XLA:CPU finishes compiling its kernels on
    the first execution, so the first run costs tens of milliseconds that are
    not the op's and must not make one side of a diff look wasteful. The run
    is recorded as the recorder's own op (``magneton::jax_warmup``), whose
    time and energy analysis leaves out of the job. Not for primitives that
    may have effects (callbacks, prints); they run once."""
    seen: set = set()
    get_aval = getattr(core, "typeof", None) or core.get_aval
    begin, end = _core.begin_array_op, _core.end_array_op

    def warm_up(primitive, args, params, run):
        name = primitive.name
        if "callback" in name or "print" in name:
            return
        try:
            # JAX caches per config context too (an abstract mesh set inside vmap).
            key = (primitive, tuple(params.items()), tuple(map(get_aval, args)), trace_context())
            if key in seen:
                return
            seen.add(key)
        except TypeError:  # an unhashable parameter: JAX cannot cache it either
            return
        begin("magneton::jax_warmup", ())
        try:
            out = run()
            for o in out if isinstance(out, (list, tuple)) else (out,):
                getattr(o, "block_until_ready", lambda: None)()
        except Exception:
            pass  # the op itself will raise as it would unrecorded
        finally:
            end(())

    return warm_up


def _make_state_stamper(jax_config):
    """Gives the ops a thread begins the jax.config values in effect as their
    runtime state ("jax.jax_enable_x64", docs/TRACE_FORMAT.md "Runtime
    state"): every option of jax.config (its value holders: whatever the
    installed JAX defines). JAX's trace context (a tuple of the flags that
    change what is traced and compiled, 0.2 µs to get) and the count of
    config changes the program made (_config_changes) are compared per op;
    the full map is built and interned only when either changed.
    jax_disable_jit is left out: the recorder forces it."""
    local = threading.local()
    trace_context, config = jax_config.trace_context, jax_config.config
    set_state, intern = _core.set_thread_state_id, _core.intern_runtime_state

    def stamp():
        context = (trace_context(), _config_changes[0])
        if getattr(local, "context", None) != context:
            local.context = context
            local.state_id = intern({"jax." + k: str(v) for k, v in config.values.items() if k != "jax_disable_jit"})
        set_state(local.state_id)  # another engine on this thread may have set its own

    return stamp


def _make_process_primitive(orig, core, source_info_util, jax_config, jit_mode=False, names=None, flush_calls=None):
    # flush_calls: reads the outputs of jitted calls ended at dispatch (jit_call_queue.py), which this op may take.
    local = _busy
    names = {} if names is None else names  # primitive -> op name: non-empty once one was recorded
    # recording_open: a recording is active and its window (magneton.window) open.
    begin, end, recording = _core.begin_array_op, _core.end_array_op, _core.recording_open
    current_name_stack = source_info_util.current_name_stack
    scope_names: dict = {}

    def scope():
        # jax.named_scope names, outermost first ("block/attn"); transforms
        # (vmap, jvp) are not scopes.
        stack = current_name_stack()
        text = scope_names.get(stack)
        if text is None:
            parts = [s.name for s in stack.stack if type(s).__name__ == "Scope"]
            text = scope_names.setdefault(stack, "/".join(parts))
        return text

    warm_up = _make_warm_up(core, jax_config.trace_context)
    stamp_state = _make_state_stamper(jax_config)

    def process_primitive(trace, primitive, args, params, /):
        # Binds made while a recorded op runs (the single-op jit that JAX
        # compiles for it) belong to that op.
        if getattr(local, "busy", False) or not recording():
            return orig(trace, primitive, args, params)
        pname = primitive.name
        if pname in _TRANSPARENT:
            return orig(trace, primitive, args, params)
        if pname in _INTERPRETED and jit_mode:
            return orig(trace, primitive, args, params)  # compiled: one jax::jit op (jax_jit_recorder.py)
        if pname in _INTERPRETED and "jaxpr" in params:
            closed = params["jaxpr"]
            with source_info_util.extend_name_stack(str(params.get("name", pname))):
                return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        name = names.get(pname)
        if name is None:
            name = names.setdefault(pname, "jax::" + pname)
        local.busy = True
        try:
            if flush_calls is not None:
                flush_calls()
            stamp_state()
            warm_up(primitive, args, params, lambda: orig(trace, primitive, args, params))
            begin(name, args, scope())
            try:
                outs = orig(trace, primitive, args, params)
            except BaseException:
                end((), None)
                raise
            end(outs if primitive.multiple_results else (outs,), params)
            return outs
        finally:
            local.busy = False

    process_primitive.__wrapped__ = orig
    return process_primitive
