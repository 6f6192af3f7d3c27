"""JAX hooks. While recording, jit is disabled (``jax_disable_jit``), so jitted
functions (the user's and JAX's own, e.g. ``jax.scipy.linalg.expm``) run their
Python body and every primitive is bound on JAX's eval trace, one XLA dispatch
each. ``EvalTrace.process_primitive`` is wrapped to announce each of those to
the C++ recorder (``_core.begin_array_op``/``end_array_op``), which converts the
input and output arrays, walks the Python stack for the call path and, with
``--values``, fingerprints the buffers.

What this records is JAX's op-by-op execution, not the fused program XLA
builds under ``jit``: per-op times are eager-dispatch times (docs/JAX.md)."""

from __future__ import annotations

import os
import sys
import threading

from magneton import _core
from magneton import config_snapshot
from magneton.recorders.torch_recorder import _PostImportFinder

# Call-like primitives whose eval rule re-binds the primitives of their body:
# not ops of their own, so the body's primitives are recorded one by one.
_TRANSPARENT = frozenset({"closed_call", "core_call", "checkpoint", "remat", "custom_jvp_call",
                          "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin", "custom_linear_solve"})
# A jitted call bound on the eval trace despite disable_jit: its jaxpr is
# evaluated here, equation by equation, inside a scope named after it.
_INTERPRETED = frozenset({"jit", "pjit"})


class JaxRecorder:
    def __init__(self):
        self._finder = None
        self._trace_cls = None
        self._orig_process = None
        self._prev_disable_jit = None
        self.hooked = False

    def install(self) -> None:
        if "jax" in sys.modules:
            self._install_jax()
        else:
            self._finder = _PostImportFinder("jax", lambda _m: self._install_jax())
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        if self._orig_process is not None:
            self._trace_cls.process_primitive = self._orig_process
            self._orig_process = None
        if self._prev_disable_jit is not None:
            import jax

            jax.config.update("jax_disable_jit", self._prev_disable_jit)
            self._prev_disable_jit = None

    def _install_jax(self) -> None:
        import jax
        import jaxlib
        from jax._src import config as jax_config
        from jax._src import core, dispatch, source_info_util

        if not _core.is_recording():
            return
        config_snapshot.record_jax_flags()  # before disable_jit is forced below
        # Call paths end at the user's line, not in JAX's dispatch machinery.
        for pkg in (jax, jaxlib):
            _core.add_skipped_code_path(os.path.dirname(os.path.abspath(pkg.__file__)) + os.sep)
        self._prev_disable_jit = bool(jax.config.jax_disable_jit)
        jax.config.update("jax_disable_jit", True)
        self._trace_cls = core.EvalTrace
        self._orig_process = core.EvalTrace.process_primitive
        self._trace_cls.process_primitive = _make_process_primitive(self._orig_process, core, dispatch,
                                                                     source_info_util, jax_config)
        self.hooked = True


def _make_compile_ahead(core, dispatch, config):
    """Compiles the single-primitive XLA program an eager op runs, the first
    time each (primitive, params, argument types) is seen, before the op is
    timed: compile time is not the op's, and must not make one side of a
    diff look wasteful."""
    seen: set = set()
    get_aval = getattr(core, "typeof", None) or core.get_aval

    def compile_ahead(primitive, args, params):
        if getattr(primitive.impl, "func", None) is not dispatch.apply_primitive and primitive.name != "stage":
            return  # an impl of its own, not one jit per primitive (stage compiles one for non-arrays)
        try:
            key = (primitive, tuple(params.items()), tuple(map(get_aval, args)))
            if key in seen:
                return
            seen.add(key)
        except TypeError:  # an unhashable parameter: JAX cannot cache it either
            return
        try:
            # In the order dispatch.apply_primitive uses: the callable is cached
            # under the config of the call (jit disabled), then run with jit on.
            fun = dispatch.xla_primitive_callable(primitive, **params)
            prev = config.disable_jit.swap_local(False)
            try:
                fun.lower(*args).compile()
            finally:
                config.disable_jit.set_local(prev)
        except Exception:
            pass  # the op itself will raise, or compile, as it would unrecorded

    return compile_ahead


def _make_process_primitive(orig, core, dispatch, source_info_util, config):
    local = threading.local()
    names: dict[str, str] = {}
    begin, end, recording = _core.begin_array_op, _core.end_array_op, _core.is_recording
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
    compile_ahead = _make_compile_ahead(core, dispatch, config)

    def process_primitive(trace, primitive, args, params, /):
        # Binds made while a recorded op runs (the single-op jit that JAX
        # compiles for it) belong to that op.
        if getattr(local, "busy", False) or not recording():
            return orig(trace, primitive, args, params)
        pname = primitive.name
        if pname in _TRANSPARENT:
            return orig(trace, primitive, args, params)
        if pname in _INTERPRETED and "jaxpr" in params:
            closed = params["jaxpr"]
            with source_info_util.extend_name_stack(str(params.get("name", pname))):
                return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        name = names.get(pname)
        if name is None:
            name = names.setdefault(pname, "jax::" + pname)
        local.busy = True
        try:
            compile_ahead(primitive, args, params)
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
