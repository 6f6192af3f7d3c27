"""llama.cpp hooks (through llama-cpp-python): every context created while
Magneton is installed gets the native ggml eval callback
(libmagneton_ggml.so, src/ggml_hook/) in its llama_context_params, which
records each graph node through the C ABI while a recording is active.
Contexts created before ``magneton.start()`` are not hooked.

Runtime state (docs/TRACE_FORMAT.md, "Runtime state"): every scalar field of
the context's llama_context_params ("llama.n_threads") and of its model's
llama_model_params ("llama.model.n_gpu_layers"), enumerated from the ctypes
structs' ``_fields_`` (a field a later llama.cpp adds is there with no change
here); pointers and callbacks are left out. The ``llama_set_X(ctx, ...)``
setters with scalar arguments (llama_set_n_threads, llama_set_embeddings,
llama_set_causal_attn, ...) are wrapped generically: a call updates its
context's state under its parameters' names and records a StateSetter at the
program's line."""

from __future__ import annotations

import ctypes
import glob
import inspect
import os
import sys

from magneton import _core
from magneton import call_site
from magneton.recorders.base import Availability, Capabilities, Recorder, RecordOptions, module_present

_HOOK_LIBRARY = "libmagneton_ggml.so"
_hook = None  # the loaded hook library; never unloaded (contexts keep its callback)


def _loaded_library(prefix: str) -> str | None:
    """The path of an already loaded shared object whose name starts with prefix."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                if os.path.basename(path).startswith(prefix):
                    return path
    except OSError:
        pass
    return None


def _ggml_base_path(llama_cpp_module) -> str:
    path = _loaded_library("libggml-base.so")
    if path:
        return path
    libdir = os.path.join(os.path.dirname(llama_cpp_module.__file__), "lib")
    found = sorted(glob.glob(os.path.join(libdir, "libggml-base.so*")))
    if not found:
        raise ImportError(f"libggml-base.so is neither loaded nor in {libdir}")
    return found[0]


def _load_hook(llama_cpp_module):
    global _hook
    if _hook is not None:
        return _hook
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), _HOOK_LIBRARY)
    if not os.path.exists(path):
        raise ImportError(f"magneton was built without its llama.cpp hook ({_HOOK_LIBRARY}): install "
                          "llama-cpp-python first, then reinstall magneton with `pip install --no-build-isolation .`")
    lib = ctypes.CDLL(path)
    lib.magneton_ggml_bind.argtypes = [ctypes.c_char_p]
    lib.magneton_ggml_bind.restype = ctypes.c_int
    lib.magneton_ggml_error.restype = ctypes.c_char_p
    lib.magneton_ggml_chain.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.magneton_ggml_chain.restype = ctypes.c_void_p
    lib.magneton_ggml_type_name.argtypes = [ctypes.c_int]
    lib.magneton_ggml_type_name.restype = ctypes.c_char_p
    lib.magneton_ggml_nodes_recorded.restype = ctypes.c_longlong
    if lib.magneton_ggml_bind(_ggml_base_path(llama_cpp_module).encode()) != 0:
        raise ImportError("magneton's llama.cpp hook cannot read this ggml: " + lib.magneton_ggml_error().decode())
    _hook = lib
    return lib


def nodes_recorded() -> int:
    """ggml nodes recorded by the hook in this process (0 before any)."""
    return int(_hook.magneton_ggml_nodes_recorded()) if _hook is not None else 0


# Contexts created while a recording was active (the trace's `engine` meta).
_contexts_recorded = 0
# llama_model_params of each model loaded while installed, by model address.
_model_states: dict[int, dict[str, str]] = {}
# The runtime state of each recorded context, by context address.
_context_states: dict[int, dict[str, str]] = {}
_MODEL_LOADERS = ("llama_model_load_from_file", "llama_load_model_from_file", "llama_model_load_from_file_ptr",
                  "llama_model_load_from_splits")
_POINTER_TYPES = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_wchar_p)


def _address(handle) -> int | None:
    """A llama_model_p / llama_context_p (an int, a c_void_p or None) as an int."""
    if handle is None or isinstance(handle, int):
        return handle
    return getattr(handle, "value", None)


def _is_scalar(ctype) -> bool:
    """A number or bool field/argument: not a pointer, array, struct or callback."""
    return (isinstance(ctype, type) and issubclass(ctype, ctypes._SimpleCData)
            and not issubclass(ctype, _POINTER_TYPES))


def struct_values(params, hook=None) -> dict[str, object]:
    """Every scalar field of a llama.cpp params struct (ggml type ids by name)."""
    values = {}
    for field, ctype in params._fields_:
        if not _is_scalar(ctype):
            continue
        value = getattr(params, field)
        if hook is not None and field in ("type_k", "type_v"):
            value = hook.magneton_ggml_type_name(int(value)).decode()
        values[field] = value
    return values


class LlamaRecorder(Recorder):
    name = "llama.cpp"
    framework = "llama_cpp"

    @classmethod
    def availability(cls) -> Availability:
        if not module_present("llama_cpp"):
            return Availability(False, "llama_cpp (llama-cpp-python) is not installed in this Python environment")
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), _HOOK_LIBRARY)
        if not os.path.exists(path):
            return Availability(False, f"magneton was built without its llama.cpp hook ({_HOOK_LIBRARY}): install "
                                       "llama-cpp-python first, then reinstall magneton")
        return Availability(True, "hooks llama_cpp when the program imports it")

    @classmethod
    def capabilities(cls) -> Capabilities:
        return Capabilities(
            ops="every ggml graph node evaluated (the scheduler's eval callback)",
            tensors="node sources and result",
            values="fingerprints of node results with --values",
            runtime_state="every scalar context and model parameter, llama_set_* calls",
            integration=f"C ABI callback in {_HOOK_LIBRARY}, set through llama-cpp-python")

    def __init__(self, options: RecordOptions | None = None):
        super().__init__(options)
        self._contexts_at_start = _contexts_recorded

    def engines(self) -> list[str]:
        return ["llama.cpp"] if _contexts_recorded > self._contexts_at_start else []

    def install(self) -> None:
        self.when_imported("llama_cpp", lambda _m: self._install())

    def uninstall(self) -> None:
        self.remove_import_hooks()
        self.restore_patches()

    def _install(self) -> None:
        try:
            import llama_cpp
            import llama_cpp.llama_cpp as low

            hook = _load_hook(llama_cpp)
        except Exception as exc:  # never break the user's import
            print(f"magneton: llama.cpp is not recorded: {exc}", file=sys.stderr)
            if _core.is_recording():
                _core.set_meta("llama.cpp.status", f"not recorded: {exc}")
            return
        callback = low.ggml_backend_sched_eval_callback(ctypes.cast(hook.magneton_ggml_eval_callback,
                                                                    ctypes.c_void_p).value)
        for fn_name in ("llama_init_from_model", "llama_new_context_with_model"):
            original = getattr(low, fn_name, None)
            if original is None:
                continue
            self._replace(llama_cpp, low, fn_name, original, self._wrap_context_factory(original, low, hook, callback))
        for fn_name in _MODEL_LOADERS:
            original = getattr(low, fn_name, None)
            if original is not None:
                self._replace(llama_cpp, low, fn_name, original, _wrap_model_loader(original))
        for fn_name in dir(low):
            original = getattr(low, fn_name)
            names = _scalar_setter_params(fn_name, original)
            if names:
                self._replace(llama_cpp, low, fn_name, original, _wrap_setter(original, fn_name, names, llama_cpp))

    def _replace(self, llama_cpp, low, fn_name, original, wrapped) -> None:
        # _internals calls through the submodule; users of the low-level
        # API through the package (`from .llama_cpp import *`).
        for owner in (low, llama_cpp):
            if getattr(owner, fn_name, None) is original:
                self.patch(owner, fn_name, wrapped)

    def _wrap_context_factory(self, original, low, hook, callback):
        def create_context(model, params):
            params = low.llama_context_params.from_buffer_copy(params)  # the caller's stays untouched
            previous = ctypes.cast(params.cb_eval, ctypes.c_void_p).value
            if previous:
                params.cb_eval_user_data = hook.magneton_ggml_chain(previous, params.cb_eval_user_data)
            params.cb_eval = callback
            ctx = original(model, params)
            if _core.is_recording():
                _record_config(params, hook, low, model, ctx)
            return ctx

        create_context.__wrapped__ = original
        return create_context


def _scalar_setter_params(fn_name: str, fn) -> list[str] | None:
    """The value parameters of a llama_set_X(ctx, value, ...) whose values are
    all scalars (llama_set_n_threads: n_threads, n_threads_batch), else None."""
    argtypes = getattr(fn, "argtypes", None)
    if not fn_name.startswith("llama_set_") or not argtypes or len(argtypes) < 2:
        return None
    if not all(_is_scalar(t) for t in argtypes[1:]):
        return None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    if len(params) != len(argtypes) or params[0] != "ctx":
        return None
    return params[1:]


def _wrap_model_loader(original):
    def load_model(*args):
        model = original(*args)
        params = args[-1] if args else None
        address = _address(model)
        if address and hasattr(params, "_fields_"):
            try:
                _model_states[address] = {f"llama.model.{k}": str(v) for k, v in struct_values(params).items()}
            except Exception:  # noqa: BLE001 - never break the load
                pass
        return model

    load_model.__wrapped__ = original
    return load_model


def _wrap_setter(original, fn_name: str, names: list[str], llama_cpp):
    skip = call_site.library_dirs(os.path.dirname(os.path.abspath(llama_cpp.__file__)) + os.sep)

    def setter(ctx, *values):
        result = original(ctx, *values)
        state = _context_states.get(_address(ctx))
        if state is None or not _core.is_recording():
            return result
        try:
            where = call_site.user_site(skip)
            for name, value in zip(names, values):
                key, text = f"llama.{name}", str(getattr(value, "value", value))
                state[key] = text
                _core.add_state_setter(key, text, where)
            _core.set_thread_state_id(_core.intern_runtime_state(state))
        except Exception:  # noqa: BLE001 - the setter itself succeeded
            pass
        return result

    setter.__wrapped__ = original
    return setter


def _record_config(params, hook, low, model=None, ctx=None) -> None:
    """The context parameters and its model's, as config entries and as the
    runtime state of the ops that run on this thread from now on
    ("llama.n_threads"; ggml's eval callback runs on the thread that calls
    llama_decode, the one that created the context in the usual one-context
    program)."""
    global _contexts_recorded
    _contexts_recorded += 1
    state: dict[str, str] = {}
    for field, value in struct_values(params, hook).items():
        _core.set_config(f"llama.cpp.{field}", repr(value), "runtime")
        state[f"llama.{field}"] = str(value)
    for key, value in _model_states.get(_address(model), {}).items():
        _core.set_config("llama.cpp." + key.removeprefix("llama."), value, "runtime")
        state[key] = value
    if _address(ctx):
        _context_states[_address(ctx)] = state
    _core.set_thread_state_id(_core.intern_runtime_state(state))
    try:
        _core.set_config("llama.cpp.system_info", low.llama_print_system_info().decode(), "runtime")
    except Exception:
        pass
