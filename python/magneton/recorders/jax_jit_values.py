"""--values in JAX jit mode: the values inside a jitted call, from a replay.

The timed run is XLA's compiled executable, whose intermediate buffers are
never exposed; so the first recorded call of each executable (its
(jaxpr, shardings, donations, layouts) key: one sample per signature, which
bounds the cost, and the first because later calls of a signature run the
same program) keeps its argument arrays, and at stop, after the profiler
stopped and after every recorded op, its jaxpr is evaluated equation by
equation on them (primitives bound one at a time, nested jits walked into,
as JAX's own eval_jaxpr does). Each equation's outputs go with the op_name
its HLO metadata carries ("jit(mlp)/jit(inner)/tanh": the call's name, the
equation's name stack, the primitive) and the user's source line to
``_core.ingest_xla_profile``, where src/record/xla_values.cc fingerprints
them and maps each onto the thunk whose root instruction it is. The replay
is a recorder op of its own, ``magneton::jax_values_replay`` (never a
graph node, its time not the job's); meta ``xla.values_replay_ms`` and
``xla.values_replay_calls`` say what it cost. docs/JAX.md "Per-fusion
values"."""

from __future__ import annotations

import time

from magneton import _core

REPLAY_OP = "magneton::jax_values_replay"
# Whose eval rule re-binds a body that XLA inlines into the caller's module:
# walked into, so their equations are values of their own.
_CALLS = {"jit", "pjit", "closed_call", "core_call"}


class ValueReplays:
    def __init__(self, busy):
        self._busy = busy  # jax_recorder's thread-local: set while replaying, so nothing is recorded
        self._samples: list = []  # (op_id, hlo_module, closed jaxpr, function name, args)
        self._keys: set = set()
        self._enabled = None

    def note(self, key, op_id, params, args, module, input_slots=None) -> None:
        """After a recorded call: keep the first call of each executable.
        input_slots: the op's input slot of each of `args` (a RecordedJit's
        op has the call's argument leaves, static ones among them), None
        when argument i is input i."""
        if self._enabled is None:
            self._enabled = bool(_core.record_values())
        if not self._enabled or key is None or key in self._keys or op_id is None or op_id < 0 or not module:
            return
        self._keys.add(key)
        if any(params.get("donated_invars", ())):  # its arguments are gone after the call
            return
        self._samples.append((op_id, module, params["jaxpr"], str(params.get("name", "?")), tuple(args),
                              input_slots))

    def replay(self) -> list:
        """[(op_id, hlo_module, [(op_name, "file:line", array), ...], input slots or None)] for
        _core.ingest_xla_profile; run at stop, outside every timed op."""
        samples, self._samples = self._samples, []
        if not samples:
            return []
        out, failed, per_call = [], 0, []
        busy = self._busy
        was = getattr(busy, "busy", False)
        busy.busy = True
        _core.begin_array_op(REPLAY_OP, ())
        start = time.perf_counter()
        try:
            for op_id, module, closed, name, args, slots in samples:
                values: list = []
                began = time.perf_counter()
                try:
                    _evaluate(closed.jaxpr, closed.consts, args, f"jit({name})", values)
                except Exception:  # a primitive that cannot run eagerly: that call has no values
                    failed += 1
                    continue
                finally:
                    per_call.append(f"{name}={(time.perf_counter() - began) * 1e3:.1f}")
                out.append((op_id, module, values, slots))
        finally:
            elapsed_ms = (time.perf_counter() - start) * 1e3
            # At stop: not the program's time, so outside its job (src/energy/attribution.cc).
            _core.end_array_op((), {"at_stop": True})
            busy.busy = was
        _core.set_meta("xla.values_replay_calls", str(len(samples)))
        _core.set_meta("xla.values_replay_failed", str(failed))
        _core.set_meta("xla.values_replay_ms", f"{elapsed_ms:.3f}")
        _core.set_meta("xla.values_replay_ms_by_call", ",".join(per_call))  # "mlp=120.5,_normal=80.1"
        return out


def _evaluate(jaxpr, consts, args, prefix: str, values: list) -> list:
    """core.eval_jaxpr, keeping each equation's outputs with its HLO op_name."""
    from jax._src import core, source_info_util

    env: dict = {}

    def read(v):
        return v.val if isinstance(v, core.Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        stack = str(eqn.source_info.name_stack)
        here = prefix + "/" + stack if stack else prefix
        name = eqn.primitive.name
        inner = eqn.params.get("jaxpr") if name in ("jit", "pjit") else eqn.params.get("call_jaxpr")
        if name in _CALLS and inner is not None:
            body = getattr(inner, "jaxpr", inner)
            sub = f"{here}/jit({eqn.params.get('name', '?')})" if name in ("jit", "pjit") else here
            outs = _evaluate(body, getattr(inner, "consts", ()), invals, sub, values)
        else:
            with eqn.ctx.manager:
                outs = eqn.primitive.bind(*invals, **eqn.primitive.get_bind_params(eqn.params))
            if not eqn.primitive.multiple_results:
                outs = [outs]
            frame = source_info_util.user_frame(eqn.source_info.traceback)
            source = f"{frame.file_name}:{frame.start_line}" if frame is not None else ""
            for o in outs:
                if hasattr(o, "shape") and hasattr(o, "dtype"):
                    values.append((f"{here}/{name}", source, o))
        for v, o in zip(eqn.outvars, outs):
            if not isinstance(v, core.DropVar):
                env[v] = o
    return [read(v) for v in jaxpr.outvars]
