"""Jitted functions made while recording keep JAX's C++ fast path.

``jax.jit`` builds its callable in ``pjit._cpp_pjit`` (a C++ ``PjitFunction``
whose first call per signature comes back to Python, and whose later calls
run in C++ without Python: ~10 µs). Going through Python on every call (JAX's
``_pjit_call_impl_python``) costs ~100-400 µs of the main thread's CPU on
bench/jax_jit, which a loaded 2-core machine pays in wall time. So while
recording, ``_cpp_pjit`` returns a ``RecordedJit`` around the C++ callable:
it begins the op ``jax::jit(<function>)`` with the argument arrays (before the
call: a donated argument is gone after it), calls the C++ callable as it is
(fast path kept: ``_get_fastpath_data`` answers as JAX would inside a wrapped
call, jax_jit_recorder.py) and ends the op at dispatch with the results
(jit_call_queue.py), its time taken from XLA's profile.

Jitted functions made before the recording started (JAX's own, made at import:
``jnp`` functions, ``jax.scipy.linalg.expm``) still come back to Python and
are recorded there. docs/JAX.md "Jit mode"."""

from __future__ import annotations

import time
import types

from magneton import _core


class RecordedJit:
    """A jitted callable that records its calls (see the module doc). Every
    attribute but calling is the wrapped callable's (``lower``, ``trace``,
    ``__wrapped__``, ``_fun``)."""

    def __init__(self, fun, hooks):
        self.__dict__.update(getattr(fun, "__dict__", {}))
        self.__dict__["_magneton_fun"] = fun
        self.__dict__["_magneton_hooks"] = hooks
        self.__dict__["_magneton_name"] = "jax::jit(" + str(getattr(fun, "__name__", "?")) + ")"
        self.__dict__["_magneton_args"] = {}  # the op's args: the HLO module, from the first call's compile
        self.__dict__["_magneton_by_signature"] = {}  # _signature -> the op's args, per cache miss
        # A library's function (jax.scipy.linalg.expm, jitted when its module
        # was imported during the recording): its own frame, as the call path's
        # innermost (jax_jit_recorder._make_callee_of).
        info = getattr(fun, "_jit_info", None)
        self.__dict__["_magneton_callee"] = hooks.callee(getattr(info, "fun_sourceinfo", None))

    def __getattr__(self, name):
        return getattr(self.__dict__["_magneton_fun"], name)

    def __get__(self, obj, objtype=None):  # a jitted method, as PjitFunction binds one
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self):
        return repr(self._magneton_fun)

    def __call__(self, *args, **kwargs):
        return self._magneton_hooks.call(self, args, kwargs)


class Hooks:
    """What a RecordedJit call does; one per recording (jax_jit_recorder.JitRecording)."""

    def __init__(self, jax, busy, stamp_state, calls, local, call_names, callee):
        from jax._src import core

        self._busy = busy
        self._local = local  # .wrapped: inside a RecordedJit's call (the C++ callable)
        self._stamp_state = stamp_state
        self._calls = calls  # jit_call_queue.CallQueue
        self._clean = core.trace_state_clean
        self._leaves = jax.tree_util.tree_leaves
        self._recording = _core.recording_open
        self._begin = _core.begin_array_op
        self._end = _core.end_array_op
        self._call_names = call_names  # function -> op name, as jax_jit_recorder keeps them
        self.callee = callee  # "<f> at <file>:<line>" -> (file, line, f) for a library's function, else None
        self.active = True

    def call(self, wrapper, args, kwargs):
        fun = wrapper._magneton_fun
        busy, local = self._busy, self._local
        if (not self.active or getattr(busy, "busy", False) or getattr(local, "wrapped", False)
                or not self._recording() or not self._clean()):
            return fun(*args, **kwargs)  # unrecorded, traced (tracers), or inside a recorded op
        name = wrapper._magneton_name
        self._call_names.setdefault(name[9:-1], name)
        inputs = self._leaves((args, kwargs))
        busy.busy = True
        try:
            self._calls.before(inputs)
            self._stamp_state()
            op_id = self._begin(name, inputs, "", wrapper._magneton_callee)
        finally:
            busy.busy = False
        # A cache miss (the first call per signature) runs jax_jit_recorder's
        # impl inside: it compiles ahead, beside this op, and leaves op_args
        # (--values keeps that call's arguments, by this op's id and inputs).
        local.wrapped = True
        local.op_args = None
        local.op_id = op_id
        local.inputs = inputs
        try:
            out = fun(*args, **kwargs)
        except BaseException:
            self._end((), None)
            raise
        finally:
            local.wrapped = False
            local.inputs = None
        returned_ns = time.monotonic_ns()
        op_args = wrapper._magneton_args
        by_signature = wrapper._magneton_by_signature
        if local.op_args:
            op_args = wrapper.__dict__["_magneton_args"] = local.op_args
            by_signature[_signature(inputs)] = op_args  # a cache miss: once per signature
        elif len(by_signature) > 1:
            # A function run with several signatures (executables): the
            # fast path does not say which ran, the arguments' types do
            # (each call's op names its executable, docs/DIFF.md
            # "One-time compilation").
            op_args = by_signature.get(_signature(inputs), op_args)
        busy.busy = True
        try:
            self._calls.dispatched(self._leaves(out), op_args, name, 0, returned_ns)
        finally:
            busy.busy = False
        return out


def _signature(leaves):
    """The argument types a jitted call compiles for (shape, dtype, weak type;
    other leaves by value, as static arguments are)."""
    out = []
    for x in leaves:
        shape = getattr(x, "shape", None)
        if shape is None:
            out.append((type(x), x if isinstance(x, (int, float, bool, str, type(None))) else id(type(x))))
        else:
            out.append((tuple(shape), str(getattr(x, "dtype", "")), bool(getattr(x, "weak_type", False))))
    return tuple(out)


def input_slots(inputs, args):
    """Where each of a jitted call's jaxpr arguments `args` is among its op's
    inputs `inputs` (the call's argument leaves; static ones are among them):
    None when in the same places, else a list (-1: not among them)."""
    if inputs is None:
        return None
    inputs = list(inputs)
    if len(inputs) == len(args) and all(a is b for a, b in zip(inputs, args)):
        return None
    slot = {}
    for i, x in enumerate(inputs):
        slot.setdefault(id(x), i)
    return [slot.get(id(a), -1) for a in args]


def install(pjit, hooks):
    """Wraps pjit._cpp_pjit; returns the function to put back."""
    orig = pjit._cpp_pjit

    def cpp_pjit(fun, jit_info):
        return RecordedJit(orig(fun, jit_info), hooks)

    cpp_pjit.__wrapped__ = orig
    pjit._cpp_pjit = cpp_pjit
    return orig
