"""llama.cpp hooks (through llama-cpp-python): every context created while
Magneton is installed gets the native ggml eval callback
(libmagneton_ggml.so, src/ggml_hook/) in its llama_context_params, which
records each graph node through the C ABI while a recording is active.
Contexts created before ``magneton.start()`` are not hooked."""

from __future__ import annotations

import ctypes
import glob
import os
import sys

from magneton import _core
from magneton.recorders.torch_recorder import _PostImportFinder

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


class LlamaRecorder:
    def __init__(self):
        self._finder = None
        self._patched: list[tuple[object, str, object]] = []
        self._contexts_at_start = _contexts_recorded

    def engines(self) -> list[str]:
        return ["llama.cpp"] if _contexts_recorded > self._contexts_at_start else []

    def install(self) -> None:
        if "llama_cpp" in sys.modules:
            self._install()
        else:
            self._finder = _PostImportFinder("llama_cpp", lambda _m: self._install())
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched.clear()

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
            wrapped = self._wrap_context_factory(original, low, hook, callback)
            # _internals calls through the submodule; users of the low-level
            # API through the package (`from .llama_cpp import *`).
            for owner in (low, llama_cpp):
                if getattr(owner, fn_name, None) is original:
                    self._patched.append((owner, fn_name, original))
                    setattr(owner, fn_name, wrapped)

    def _wrap_context_factory(self, original, low, hook, callback):
        def create_context(model, params):
            params = low.llama_context_params.from_buffer_copy(params)  # the caller's stays untouched
            previous = ctypes.cast(params.cb_eval, ctypes.c_void_p).value
            if previous:
                params.cb_eval_user_data = hook.magneton_ggml_chain(previous, params.cb_eval_user_data)
            params.cb_eval = callback
            ctx = original(model, params)
            if _core.is_recording():
                _record_config(params, hook, low)
            return ctx

        create_context.__wrapped__ = original
        return create_context


def _record_config(params, hook, low) -> None:
    """The context parameters, as config entries and as the runtime state of
    the ops that run on this thread from now on ("llama.n_threads"; ggml's
    eval callback runs on the thread that calls llama_decode, the one that
    created the context in the usual one-context program)."""
    global _contexts_recorded
    _contexts_recorded += 1
    state: dict[str, str] = {}
    for field, ctype in params._fields_:
        if field.startswith("cb_") or field.endswith("_user_data") or field in ("abort_callback",
                                                                                "abort_callback_data"):
            continue
        value = getattr(params, field)
        if not isinstance(value, (int, float, bool)):
            continue
        if field in ("type_k", "type_v"):
            value = hook.magneton_ggml_type_name(int(value)).decode()
        _core.set_config(f"llama.cpp.{field}", repr(value), "runtime")
        state[f"llama.{field}"] = str(value)
    _core.set_thread_state_id(_core.intern_runtime_state(state))
    try:
        _core.set_config("llama.cpp.system_info", low.llama_print_system_info().decode(), "runtime")
    except Exception:
        pass
