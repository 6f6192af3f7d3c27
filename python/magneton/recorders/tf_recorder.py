"""TensorFlow hooks (TF 2.x, eager). Every eager op reaches the TF runtime
through one of two Python-visible calls: the generated op wrappers
(``tensorflow/python/ops/gen_*_ops.py``) call
``pywrap_tfe.TFE_Py_FastPathExecute`` (C++ converts the arguments and runs
the op), and fall back to ``execute.execute`` / ``quick_execute`` (the slow
path, also how a ``tf.function`` call runs its graph as one
``__inference_<name>_<n>`` function op). Both module attributes are looked up
at call time, so replacing them announces each op to the C++ recorder
(``_core.begin_array_op`` before, ``end_array_op`` after: the op's time is
its own kernel plus TF's dispatch, as the program runs it, unchanged). The
inputs and outputs are EagerTensors, read without a copy by
src/pyhooks/array_view.cc (a host tensor's ``_numpy()`` is a NumPy array
over TF's own buffer).

A ``tf.function`` call is one op ``tf::function:<name>`` with its tensors;
the graph nodes TF's executor ran inside it come from TF's profiler, started
at the first call and ingested at stop (tf_graph_profile.py), as nested
``tf::<OpType>`` ops without tensors. Its ``jit_compile=`` (the graph's
``_XlaMustCompile`` attr) is in the call's runtime state.

Not used: ``tf.debugging``'s op callbacks (op_callbacks.add_op_callback)
see inputs and outputs only after the op ran (no start time) and make every
op build Python lists of its attrs (docs/TENSORFLOW.md).

Scopes: Keras 3 layers enter ``tf.name_scope(layer.name)`` in eager mode,
which TF keeps as the eager context's ``scope_name`` ("sequential/dense_1/"):
that is each op's module scope."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading

from magneton import _core
from magneton import env_snapshot
from magneton.recorders.base import Capabilities, Recorder, RecordOptions
from magneton.recorders import tf_graph_profile, tf_state

# "__inference_step_123" (a tf.function's graph, run as one op) -> "step".
_FUNCTION_NAME = re.compile(r"^__inference_(.+?)_\d+$")


class TfRecorder(Recorder):
    name = "tensorflow"
    framework = "tensorflow"

    @classmethod
    def capabilities(cls) -> Capabilities:
        return Capabilities(
            ops="every eager op (fast and slow path); a tf.function call as one op, its graph nodes nested",
            tensors="op inputs and outputs (EagerTensors, read without a copy)",
            values="fingerprints of every host tensor with --values",
            runtime_state="tf.config getters (threading, optimizer/jit, devices, TF32) and setters, Keras dtype policy",
            compiled="tf.function calls as ops (tf::function:<name>, jit_compile in their state), each executed graph "
                     "node nested as tf::<OpType> from TF's profiler",
            integration="Python wrappers of TFE_Py_FastPathExecute and execute.execute + magneton._core array ops; "
                        "TF's profiler ingested at stop")

    def __init__(self, options: RecordOptions | None = None):
        super().__init__(options)
        self._state = None
        self._hooks = None
        self._profile = tf_graph_profile.GraphProfile()
        self.hooked = False

    def engines(self) -> list[str]:
        # Hooked is not enough: a program may import TF (Keras does) and run no op of it.
        return ["tensorflow"] if self._hooks is not None and self._hooks.recorded() else []

    def install(self) -> None:
        # tensorflow's own __init__ imports the modules hooked here: hook
        # when the package finished importing.
        self.when_imported("tensorflow", lambda _m: self._install_tf(), ready=lambda m: hasattr(m, "config"))

    def uninstall(self) -> None:
        self.remove_import_hooks()
        self.restore_patches()
        self._profile.stop()
        if self._state is not None:
            self._state.uninstall()
            self._state = None

    def _install_tf(self) -> None:
        if not _core.is_recording():
            return
        try:
            import tensorflow as tf
            from tensorflow.python import pywrap_tfe
            from tensorflow.python.eager import context, core, execute
            from tensorflow.python.framework import op_def_registry
        except Exception as exc:  # another TF layout: the program runs unrecorded
            print(f"magneton: TensorFlow hook not installed: {exc}", file=sys.stderr)
            return
        tf_dir = os.path.dirname(os.path.abspath(tf.__file__)) + os.sep
        # Call paths end at the user's line and the TF API it called
        # (tensorflow/python/ops/math_ops.py), not at the generated wrappers
        # and the eager dispatch.
        for part in ("python" + os.sep + "eager" + os.sep, "python" + os.sep + "framework" + os.sep,
                     "python" + os.sep + "util" + os.sep, "python" + os.sep + "ops" + os.sep + "gen_",
                     "python" + os.sep + "ops" + os.sep + "weak_tensor_ops.py",
                     "python" + os.sep + "ops" + os.sep + "dispatch.py"):
            _core.add_skipped_code_path(tf_dir + part)
        _core.add_skipped_code_path(os.path.abspath(__file__))
        # Keras 3's call machinery (traceback filtering, Layer.__call__,
        # Operation.__call__, the TF backend's op shims): call paths keep the
        # layer's own call (keras/src/layers/core/dense.py:Dense.call).
        keras_spec = importlib.util.find_spec("keras")
        if keras_spec is not None and keras_spec.origin:
            keras_src = os.path.join(os.path.dirname(os.path.abspath(keras_spec.origin)), "src") + os.sep
            for part in ("utils" + os.sep + "traceback_utils.py", "layers" + os.sep + "layer.py",
                         "ops" + os.sep + "operation.py", "backend" + os.sep, "models" + os.sep + "functional.py",
                         "ops" + os.sep + "function.py", "utils" + os.sep + "tracking.py"):
                _core.add_skipped_code_path(keras_src + part)
        env_snapshot.snapshot("import:tensorflow")  # what TF's native libraries read as they loaded (TF_ENABLE_ONEDNN_OPTS)
        self._state = tf_state.TfState(tf)
        self._state.install()
        hooks = self._hooks = _Hooks(context, core, op_def_registry, self._state, self._profile.start)
        self.patch(pywrap_tfe, "TFE_Py_FastPathExecute", hooks.fast_path(pywrap_tfe.TFE_Py_FastPathExecute))
        from tensorflow.python.framework import constant_op

        self.patch(constant_op, "convert_to_eager_tensor", hooks.host_constant(constant_op.convert_to_eager_tensor))
        slow = hooks.slow_path(execute.quick_execute)
        self.patch(execute, "quick_execute", slow)
        self.patch(execute, "execute", slow)
        self.hooked = True


def _flat_outputs(result) -> tuple:
    """An op's result as a flat tuple of tensors: one tensor, a list (or a
    namedtuple of tensors and lists, e.g. Unique, Split), or None."""
    if result is None:
        return ()
    if isinstance(result, (list, tuple)):
        out = []
        for r in result:
            if isinstance(r, (list, tuple)):
                out.extend(r)
            else:
                out.append(r)
        return tuple(out)
    return (result,)


def _is_caller(frame, start, depth: int = 4) -> bool:
    """Whether ``frame`` is ``start`` or one of its next callers (the
    generated op function that called its ``*_eager_fallback``)."""
    f = start
    for _ in range(depth):
        if f is None:
            return False
        if f is frame:
            return True
        f = f.f_back
    return False


def _close_stale(pending: list) -> None:
    """Ends the fast-path ops left open for a slow path that never came: the
    generated op function returned without running it (a type dispatcher, e.g.
    for ragged tensors, ran other ops instead). Its frame is then no longer
    on the stack; every op begun inside it has ended, so the open op is the
    innermost one."""
    live = set()
    f = sys._getframe(2)
    while f is not None:
        live.add(id(f))
        f = f.f_back
    while pending and id(pending[-1][1]) not in live:
        pending.pop()
        _core.end_array_op((), {"fast_path_fallback": "not run by the slow path"})


class _Hooks:
    """The two replacements, sharing one per-thread state: whether a fast
    path call that TF sent on to the slow path (``_FallbackException``: an
    argument C++ cannot convert, e.g. a Keras variable) left its op open for
    the slow path to finish."""

    def __init__(self, context, core, op_def_registry, state, first_function):
        self.context = context
        self.fallback = core._FallbackException
        self.op_defs = op_def_registry
        self.stamp = state.stamp
        self.stamp_function = state.stamp_function
        self.first_function = first_function  # starts TF's profiler for the graphs' nodes
        self.local = threading.local()
        self.input_counts: dict[str, int] = {}
        self.names: dict = {}  # op type -> op name; non-empty once an op was recorded
        self.constants = [0]  # tf::Const ops recorded
        self.jit_compile: dict = {}  # function op type -> its jit_compile, as text

    def recorded(self) -> bool:
        return bool(self.names) or self.constants[0] > 0

    def function_jit_compile(self, op_type, ctx) -> str:
        """A tf.function's ``jit_compile=`` as its graph carries it: the
        FunctionDef attr ``_XlaMustCompile`` (true / false; absent for None,
        where tf.config.optimizer's jit decides)."""
        found = self.jit_compile.get(op_type)
        if found is None:
            found = "None"
            try:
                text = op_type.decode() if isinstance(op_type, bytes) else str(op_type)
                attr = ctx.get_function_def(text).attr
                if "_XlaMustCompile" in attr:
                    found = str(bool(attr["_XlaMustCompile"].b))
            except Exception:
                found = "unknown"
            self.jit_compile[op_type] = found
        return found

    def input_count(self, op_type: str) -> int:
        n = self.input_counts.get(op_type)
        if n is None:
            op_def = self.op_defs.get(op_type)
            n = len(op_def.input_arg) if op_def is not None else 0
            self.input_counts[op_type] = n
        return n

    def op_name(self, op_type) -> str:
        name = self.names.get(op_type)
        if name is None:
            text = op_type.decode() if isinstance(op_type, bytes) else str(op_type)
            m = _FUNCTION_NAME.match(text)
            name = self.names.setdefault(op_type, "tf::function:" + m.group(1) if m else "tf::" + text)
        return name

    def scope(self, ctx) -> str:
        return ctx.scope_name.rstrip("/") if ctx is not None else ""

    def fast_path(self, orig):
        begin, end, recording = _core.begin_array_op, _core.end_array_op, _core.recording_open
        local, fallback, close_stale = self.local, self.fallback, _close_stale

        def TFE_Py_FastPathExecute(*args):
            if getattr(local, "pending", None):
                close_stale(local.pending)
            if not recording() or len(args) < 3:
                return orig(*args)
            ctx, op_type = args[0], args[1]
            n = self.input_count(op_type)
            inputs = []
            for x in args[3:3 + n]:
                if isinstance(x, (list, tuple)):
                    inputs.extend(x)
                else:
                    inputs.append(x)
            attrs = args[3 + n:]
            params = {attrs[i]: attrs[i + 1] for i in range(0, len(attrs) - 1, 2) if isinstance(attrs[i], str)}
            self.stamp()
            begin(self.op_name(op_type), inputs, self.scope(ctx))
            try:
                result = orig(*args)
            except fallback:
                # Left open: the generated wrapper converts the arguments in
                # Python and runs the same op through execute.execute, which
                # ends it (the conversions' own ops nest inside it). The
                # wrapper's frame says which call is waiting.
                pending = getattr(local, "pending", None)
                if pending is None:
                    local.pending = pending = []
                pending.append((str(op_type), sys._getframe(1)))
                raise
            except BaseException:
                end((), params)
                raise
            end(_flat_outputs(result), params)
            return result

        return TFE_Py_FastPathExecute

    def host_constant(self, orig):
        """``tf.constant`` / ``tf.convert_to_tensor`` of host data (NumPy,
        lists) makes an EagerTensor without running an op. Recorded as
        ``tf::Const`` producing it, so each new value is a tensor of its own:
        TF frees and reuses host buffers at once, and a tensor that no op
        produced is known by its address, so a later constant at the same
        address would read as the earlier one (a batch per step)."""
        begin, end, recording = _core.begin_array_op, _core.end_array_op, _core.recording_open
        eager_tensor = None
        constants = self.constants

        def convert_to_eager_tensor(value, ctx, dtype=None):
            nonlocal eager_tensor
            if eager_tensor is None:
                from tensorflow.python.framework import ops

                eager_tensor = ops.EagerTensor
            if isinstance(value, eager_tensor) or not recording():
                return orig(value, ctx, dtype)
            constants[0] += 1
            begin("tf::Const", (), self.scope(ctx))
            try:
                t = orig(value, ctx, dtype)
            except BaseException:
                end((), None)
                raise
            end((t,), None)
            return t

        return convert_to_eager_tensor

    def slow_path(self, orig):
        begin, end, recording = _core.begin_array_op, _core.end_array_op, _core.recording_open
        local = self.local

        def quick_execute(op_name, num_outputs, inputs, attrs, ctx, name=None):
            pending = getattr(local, "pending", None)
            resumed = False
            if pending:
                text = op_name.decode() if isinstance(op_name, bytes) else str(op_name)
                resumed = pending[-1][0] == text and _is_caller(pending[-1][1], sys._getframe(1))
                if resumed:
                    pending.pop()
                else:
                    _close_stale(pending)
            if not resumed and not recording():
                return orig(op_name, num_outputs, inputs, attrs, ctx, name)
            attrs = attrs or ()
            params = {attrs[i]: attrs[i + 1] for i in range(0, len(attrs) - 1, 2) if isinstance(attrs[i], str)}
            if not resumed:
                name = self.op_name(op_name)
                if name.startswith("tf::function:"):
                    self.first_function()
                    self.stamp_function(self.function_jit_compile(op_name, ctx))
                else:
                    self.stamp()
                begin(name, inputs, self.scope(ctx))
            try:
                result = orig(op_name, num_outputs, inputs, attrs, ctx, name)
            except BaseException:
                end((), params)
                raise
            end(_flat_outputs(result), params)
            return result

        return quick_execute
