"""How each nn.Module was constructed: the user's call and its arguments.

A module's ops are issued from inside its forward (or backward), far from the
line that chose how it behaves: ``DDP(model, find_unused_parameters=True)``
decides that every forward searches the autograd graph, yet no op's call path
passes that line. So ``nn.Module.__init__`` is wrapped: when a module is
constructed while recording, the outermost ``__init__`` of the object on the
stack (the class the user instantiated) gives the constructor's arguments, and
the frames above it the call that constructed it. The scope namer hands both
to the C++ recorder with the module's scope, which stores them on the scope
row (docs/TRACE_FORMAT.md "Scope origins"); diagnosis compares the
constructors of the scopes a region's ops ran in (docs/DIFF.md).

Only values that compare as text are kept (None, bools, numbers, short
strings, dtypes, devices, enums, and lists or tuples of them); any other
argument is recorded by its type's name. Arguments whose names look secret are
redacted like config entries.
"""

from __future__ import annotations

import enum
import json
import math
import sys
import weakref

from magneton import _core

_MAX_FRAMES = 256
_MAX_STR = 200
_MAX_ITEMS = 32
_SKIPPED_PATHS = ("site-packages/magneton/", "python/magneton/")  # as the C++ frame walk skips them

_origins: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_original_init = None


def _encode(value, depth=0):
    """A value in the op-arguments grammar (docs/TRACE_FORMAT.md "Op arguments")."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return {"repr": str(value)}
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else {"repr": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, str):
        return value if len(value) <= _MAX_STR else {"repr": value[:_MAX_STR] + "..."}
    if isinstance(value, (list, tuple)) and depth < 3 and len(value) <= _MAX_ITEMS:
        return [_encode(v, depth + 1) for v in value]
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).replace("torch.", "")}
        if isinstance(value, torch.device):
            return {"device": str(value)}
    return {"unrecorded": type(value).__qualname__}


def _constructor_frame(module, frame):
    """The outermost __init__ of `module` on the stack from `frame` outwards."""
    outer = None
    while frame is not None:
        code = frame.f_code
        if code.co_name != "__init__" or code.co_argcount < 1:
            break
        if frame.f_locals.get(code.co_varnames[0]) is not module:
            break
        outer = frame
        frame = frame.f_back
    return outer


def _arguments(frame) -> str:
    code = frame.f_code
    local = frame.f_locals
    names = list(code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount])
    out = {}
    for name in names:
        if name in local:
            out[name] = local[name]
    flags = code.co_flags
    index = code.co_argcount + code.co_kwonlyargcount
    if flags & 0x04:  # CO_VARARGS
        star = code.co_varnames[index]
        index += 1
        if isinstance(local.get(star), tuple) and local[star]:
            out["*" + star] = local[star]
    if flags & 0x08:  # CO_VARKEYWORDS
        extra = local.get(code.co_varnames[index])
        if isinstance(extra, dict):
            for k, v in extra.items():
                if isinstance(k, str) and k not in out:
                    out[k] = v
    encoded = {}
    for name, value in out.items():
        value = _encode(value)
        encoded[name] = (_core.REDACTED if _core.is_secret_name(name)
                         else _core.redact(name, value) if isinstance(value, str) else value)
    return json.dumps(encoded, allow_nan=False, separators=(",", ":"))


def _frames_from(frame):
    """(file, line, function) from `frame` outwards, outermost first, without magneton's own frames."""
    out = []
    while frame is not None and len(out) < _MAX_FRAMES:
        code = frame.f_code
        file = code.co_filename
        if not any(p in file for p in _SKIPPED_PATHS):
            out.append((file, frame.f_lineno or 0, getattr(code, "co_qualname", code.co_name)))
        frame = frame.f_back
    out.reverse()
    return out


def _note(module, frame) -> None:
    outer = _constructor_frame(module, frame)
    if outer is None or outer.f_back is None:
        return  # nn.Module() itself, or a class made at the outermost level: nothing to say
    _origins[module] = (_frames_from(outer.f_back), _arguments(outer))


def origin(module):
    """(construction frames, constructor arguments JSON) of a module, or None."""
    try:
        return _origins.get(module)
    except TypeError:  # a module that cannot be weakly referenced or hashed
        return None


def install(torch) -> None:
    global _original_init
    if _original_init is not None:
        return
    original = torch.nn.Module.__init__
    _original_init = original

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if _core.is_recording():
            try:
                _note(self, sys._getframe(1))
            except Exception:  # recording how a module was made must never break making it
                pass

    __init__.__wrapped__ = original
    __init__.__doc__ = original.__doc__
    __init__.__qualname__ = original.__qualname__
    torch.nn.Module.__init__ = __init__


def uninstall(torch) -> None:
    global _original_init
    if _original_init is None:
        return
    torch.nn.Module.__init__ = _original_init
    _original_init = None
    _origins.clear()
