"""TensorFlow's runtime state, by introspection of its option namespaces:
every getter of ``tf.config``, ``tf.config.threading``,
``tf.config.optimizer`` and ``tf.config.experimental`` that takes no
argument (intra/inter-op threads, jit, graph optimizer options, soft device
placement, visible devices, determinism, TF32, functions run eagerly, ...)
and the Keras dtype policy (mixed precision); a tf.function call's op adds
its own ``jit_compile=`` (``tf.function.jit_compile``). Read at start and after each
setter the program calls in those namespaces (each recorded as a
StateSetter at the program's line), never per op: ``stamp()`` per op only
compares a change counter. The environment TF reads (``TF_ENABLE_ONEDNN_OPTS``
and the other ``TF_*``) comes through ``magneton record``'s getenv
interposer (env_snapshot.py), like every engine's."""

from __future__ import annotations

import inspect
import os
import sys
import threading

from magneton import _core
from magneton import call_site
from magneton import config_snapshot

# Namespaces whose getters are the runtime state and whose setters change it.
_NAMESPACES = ("config", "config.threading", "config.optimizer", "config.experimental")
_GETTER_PREFIXES = ("get_", "is_")
_GETTER_SUFFIXES = ("_enabled", "functions_run_eagerly")
_SETTER_PREFIXES = ("set_", "enable_", "disable_", "run_functions_eagerly", "experimental_run_functions_eagerly")
# A tf.function call's own jit_compile= (not a tf.config getter).
FUNCTION_JIT_COMPILE = "tf.function.jit_compile"
# Getters that are not options: counters of memory in use (they change with
# every allocation, not with anything the program chose).
_NOT_STATE = frozenset({"get_memory_usage", "get_memory_info"})


def _takes_no_argument(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def _resolve(tf, dotted: str):
    obj = tf
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    name = getattr(value, "name", None)  # PhysicalDevice, DTypePolicy
    if isinstance(name, str) and type(value).__name__ in ("PhysicalDevice", "LogicalDevice", "DTypePolicy"):
        return name
    return str(value)


class TfState:
    def __init__(self, tf):
        self.tf = tf
        self.getters: list[tuple[str, object]] = []
        self.changes = [0]
        self.local = threading.local()
        self.restore: list[tuple[object, str, object]] = []
        self.keras_wrapped = False

    def install(self) -> None:
        tf = self.tf
        tf_dir = os.path.dirname(os.path.abspath(tf.__file__)) + os.sep
        skip = call_site.library_dirs(tf_dir)
        for ns in _NAMESPACES:
            module = _resolve(tf, ns)
            if module is None:
                continue
            for attr in sorted(dir(module)):
                if attr.startswith(("_", "experimental_")):  # deprecated aliases of the plain names
                    continue
                fn = getattr(module, attr, None)
                if not callable(fn) or isinstance(fn, type):
                    continue
                key = f"tf.{ns}.{attr}"
                if attr.startswith(_SETTER_PREFIXES):
                    self._wrap_setter(module, attr, fn, key, skip)
                elif (attr.startswith(_GETTER_PREFIXES) or attr.endswith(_GETTER_SUFFIXES)) \
                        and attr not in _NOT_STATE and _takes_no_argument(fn):
                    self.getters.append((key.replace(".get_", ".").replace(".is_", "."), fn))
        self._wrap_keras_policy(skip)
        for key, value in sorted(self.read().items()):
            config_snapshot._set(key, value, "global_flag")

    def _wrap_keras_policy(self, skip) -> bool:
        """keras.config.set_dtype_policy / keras.mixed_precision.set_global_policy
        (one function under two names), when Keras is (or gets) imported:
        its state is read from sys.modules, so no import here."""
        keras = sys.modules.get("keras")
        if keras is None or self.keras_wrapped:
            return self.keras_wrapped
        for ns, attr in (("config", "set_dtype_policy"), ("mixed_precision", "set_global_policy")):
            module = getattr(keras, ns, None)
            fn = getattr(module, attr, None) if module is not None else None
            if callable(fn):
                self._wrap_setter(module, attr, fn, f"keras.{ns}.{attr}", skip)
                self.keras_wrapped = True
        return self.keras_wrapped

    def _wrap_setter(self, module, attr: str, fn, key: str, skip) -> None:
        changes = self.changes

        def setter(*args, **kwargs):
            result = fn(*args, **kwargs)
            changes[0] += 1
            if _core.is_recording():
                shown = ", ".join([_text(a) for a in args] + [f"{k}={_text(v)}" for k, v in kwargs.items()])
                _core.add_state_setter(key, shown, call_site.user_site(skip))
            return result

        setter.__wrapped__ = fn
        setter.__name__ = getattr(fn, "__name__", attr)
        setter.__doc__ = getattr(fn, "__doc__", None)
        self.restore.append((module, attr, fn))
        setattr(module, attr, setter)

    def uninstall(self) -> None:
        for module, attr, fn in reversed(self.restore):
            setattr(module, attr, fn)
        self.restore.clear()

    def read(self) -> dict[str, str]:
        values = {}
        for key, fn in self.getters:
            try:
                values[key] = _text(fn())
            except Exception as exc:  # a getter that needs a device this machine lacks
                values[key] = f"<unavailable: {type(exc).__name__}>"
        keras = sys.modules.get("keras")
        policy = getattr(getattr(keras, "config", None), "dtype_policy", None) if keras is not None else None
        if callable(policy):
            try:
                values["keras.config.dtype_policy"] = _text(policy())
            except Exception:
                pass
        return values

    def stamp(self) -> None:
        """Per op: the state id of the values in effect, re-read only after a
        setter ran (or Keras got imported since the last read)."""
        local = self.local
        if not self.keras_wrapped and "keras" in sys.modules:
            tf_dir = os.path.dirname(os.path.abspath(self.tf.__file__)) + os.sep
            if self._wrap_keras_policy(call_site.library_dirs(tf_dir)):
                self.changes[0] += 1  # the policy is state from now on
                policy = self.read().get("keras.config.dtype_policy")
                if policy is not None:
                    config_snapshot._set("keras.config.dtype_policy", policy, "global_flag")
        key = self.changes[0]
        if getattr(local, "key", None) != key:
            local.key = key
            local.state_id = _core.intern_runtime_state(self.read())
            local.function_ids = {}
        _core.set_thread_state_id(local.state_id)

    def stamp_function(self, jit_compile: str) -> None:
        """For a tf.function call's op (and the graph nodes nested in it): the
        state in effect plus ``tf.function.jit_compile`` (True / False /
        None), so that a diff names a function compiled with XLA on one side."""
        self.stamp()
        local = self.local
        state_id = local.function_ids.get(jit_compile)
        if state_id is None:
            values = self.read()
            values[FUNCTION_JIT_COMPILE] = jit_compile
            state_id = local.function_ids[jit_compile] = _core.intern_runtime_state(values)
        _core.set_thread_state_id(state_id)
