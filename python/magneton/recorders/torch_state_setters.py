"""Where the program set the runtime state the torch hook reads in C++: its
setters and context managers (``torch.set_num_threads``, ``with torch.no_grad()``,
``sdpa_kernel(...)``) are wrapped so that each call records a StateSetter
with the key it sets, the value, and the program's own line (the innermost
frame outside torch, Magneton, the standard library and installed packages).
The values the ops ran under are read by the C++ hook at every op
(src/torch_hook/torch_state.cc); this says only where they were set. Keys
are the hook's (docs/TRACE_FORMAT.md, "Runtime state"). Every other torch
setting is found and watched by torch_state_introspect."""

from __future__ import annotations

import functools
import os
import sys

from magneton import _core
from magneton import call_site
from magneton.recorders import torch_state_introspect

_patches: list[tuple[object, str, object]] = []  # (owner, attribute, original)
_skip_dirs: tuple[str, ...] = ()
_torch_dir = ""
# torch's decorator form of its context managers (@torch.no_grad()) enters
# them from here on behalf of the decorated function's caller.
_torch_decorator_file = ""


def _bool(v) -> str:
    return "true" if v else "false"


def _dtype(d) -> str:
    return str(d).removeprefix("torch.")


def _where() -> str:
    """file:line:function of the innermost frame that is the program's own."""
    return call_site.user_site(_skip_dirs, depth=3)


def _record(pairs) -> None:
    if not _core.is_recording():
        return
    # torch setting its own state (no_grad.__enter__ calls set_grad_enabled,
    # and __exit__ restores it) is not where the program set it.
    caller = sys._getframe(2).f_code.co_filename
    if caller.startswith(_torch_dir) and caller != _torch_decorator_file:
        return
    where = _where()
    for key, value in pairs:
        _core.add_state_setter(key, value, where)


def _patch(owner, attr: str, make_wrapper) -> None:
    original = getattr(owner, attr, None)
    if original is None:
        return  # not in this torch version
    wrapper = make_wrapper(original)
    try:
        functools.update_wrapper(wrapper, original)
    except (AttributeError, TypeError):
        pass
    setattr(owner, attr, wrapper)
    _patches.append((owner, attr, original))


def _function(owner, attr: str, pairs_of) -> None:
    """A setter function: records pairs_of(*args, **kwargs) before calling it."""
    def make(original):
        def wrapper(*args, **kwargs):
            try:
                _record(pairs_of(*args, **kwargs))
            except Exception:  # a call torch itself will reject: let it say so
                pass
            return original(*args, **kwargs)
        return wrapper
    _patch(owner, attr, make)


def _method(cls, attr: str, pairs_of) -> None:
    """A context manager's __enter__ (or a class's __init__): pairs_of(self, ...)."""
    def make(original):
        def wrapper(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            try:
                _record(pairs_of(self, *args, **kwargs))
            except Exception:
                pass
            return result
        return wrapper
    _patch(cls, attr, make)


_SDP_KEYS = {"FLASH_ATTENTION": "torch.backends.cuda.flash_sdp_enabled",
             "EFFICIENT_ATTENTION": "torch.backends.cuda.mem_efficient_sdp_enabled",
             "MATH": "torch.backends.cuda.math_sdp_enabled",
             "CUDNN_ATTENTION": "torch.backends.cuda.cudnn_sdp_enabled"}


def _sdpa_pairs(backends=None, *args, **kwargs):
    if backends is None:
        backends = kwargs.get("backends")
    if backends is None:
        return []
    chosen = {getattr(b, "name", str(b)) for b in (backends if isinstance(backends, (list, tuple, set)) else [backends])}
    return [(key, _bool(name in chosen)) for name, key in _SDP_KEYS.items()]


def install(torch, hook) -> None:
    global _skip_dirs, _torch_dir, _torch_decorator_file
    _torch_dir = os.path.dirname(torch.__file__) + os.sep
    _torch_decorator_file = os.path.join(_torch_dir, "utils", "_contextlib.py")
    _skip_dirs = call_site.library_dirs(_torch_dir)

    def interop(n, *a, **k):
        return [("torch.num_interop_threads", str(n))]

    _function(torch, "set_num_threads", lambda n, *a, **k: [("torch.num_threads", str(n))])
    _function(torch, "set_num_interop_threads", interop)
    _function(torch, "set_default_dtype", lambda d, *a, **k: [("torch.default_dtype", _dtype(d))])
    _function(torch, "set_float32_matmul_precision",
              lambda p, *a, **k: [("torch.float32_matmul_precision", str(p))])
    _function(torch, "use_deterministic_algorithms",
              lambda mode, *a, warn_only=False, **k: [("torch.deterministic_algorithms", _bool(mode)),
                                                      ("torch.deterministic_algorithms.warn_only", _bool(warn_only))])
    _method(torch.set_grad_enabled, "__init__", lambda self, mode, *a, **k: [("torch.grad_enabled", _bool(mode))])
    _method(torch.no_grad, "__enter__", lambda self, *a: [("torch.grad_enabled", "false")])
    _method(torch.enable_grad, "__enter__", lambda self, *a: [("torch.grad_enabled", "true")])
    _method(torch.inference_mode, "__enter__",
            lambda self, *a: [("torch.inference_mode", _bool(getattr(self, "mode", True)))])
    autocast = getattr(getattr(torch, "amp", None), "autocast", None)
    if isinstance(autocast, type):
        _method(autocast, "__enter__", lambda self, *a: [
            (f"torch.autocast.{self.device}.enabled", _bool(self._enabled)),
            (f"torch.autocast.{self.device}.dtype", _dtype(self.fast_dtype))])
    cuda_backends = getattr(torch.backends, "cuda", None)
    for fn, key in (("enable_flash_sdp", "torch.backends.cuda.flash_sdp_enabled"),
                    ("enable_mem_efficient_sdp", "torch.backends.cuda.mem_efficient_sdp_enabled"),
                    ("enable_math_sdp", "torch.backends.cuda.math_sdp_enabled"),
                    ("enable_cudnn_sdp", "torch.backends.cuda.cudnn_sdp_enabled")):
        if cuda_backends is not None:
            _function(cuda_backends, fn, lambda enabled, *a, _key=key, **k: [(_key, _bool(enabled))])
    try:
        import torch.nn.attention as attention
    except ImportError:
        attention = None
    if attention is not None:
        _function(attention, "sdpa_kernel", _sdpa_pairs)

    # The inter-op pool size is not read at every op (it asks the OS until set).
    original = torch.set_num_interop_threads

    def set_num_interop_threads(*args, **kwargs):
        result = original(*args, **kwargs)
        hook.refresh_state()
        return result

    functools.update_wrapper(set_num_interop_threads, original)
    torch.set_num_interop_threads = set_num_interop_threads
    _patches.append((torch, "set_num_interop_threads", original))
    # Every other setting, found by walking torch; its wrappers go over these.
    torch_state_introspect.install(torch, hook, [getattr(owner, attr) for owner, attr, _ in _patches])


def uninstall() -> None:
    torch_state_introspect.uninstall()
    while _patches:
        owner, attr, original = _patches.pop()
        setattr(owner, attr, original)
