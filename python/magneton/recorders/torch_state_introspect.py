"""Every torch setting Python can read, found by walking torch rather than
listed: the flags under ``torch.backends`` (module attributes and
properties, nested objects such as ``torch.backends.cuda.matmul``, and the
module functions that read a setting: ``get_X``, ``X_enabled`` with an
``enable_X`` twin, ``preferred_X``) and the global ``torch.get_X`` /
``torch.is_X`` getters with a ``torch.set_X`` twin. A flag a later torch
adds is found with no change here.

Read at install and after each change, never per op: the values go to the
torch hook (``_torch_hook.set_python_state``), which merges them into the
runtime state of every op that starts after (one atomic load per op tells it
whether they changed). Changes are seen through the setters, wrapped
generically: any assignment under ``torch.backends`` (the modules' and
nested objects' classes are swapped for subclasses that watch
``__setattr__``), the ``torch.backends`` functions that set (``set_*``,
``enable_*``, ``disable_*``, ``allow_*``, ``preferred_*``, ``flags``; the
context managers ``flags(...)`` returns are re-read on enter and exit),
every ``torch.set_*`` and ``torch.use_*`` function. A setter call the
program made (not torch on its own behalf) records a StateSetter for each key
whose value it changed, at the program's line, and an assignment one for the
key it names; a ``torch.set_X`` with no getter twin
(``set_flush_denormal``) is known only by its arguments, which become the
value of ``torch.X``.

Left out: keys the hook reads in C++ at every op (``torch.num_threads``,
``torch.backends.mkldnn.enabled``, ...: exact per thread, and context
managers change them), the autocast family (thread-local; C++-read as
``torch.autocast.<device>.*``), getters that warn (deprecated aliases) and
values that are not simple (a tensor, a module). Values: bools as
``true``/``false`` like the C++ keys, enums by name, dtypes without
``torch.``. docs/TRACE_FORMAT.md, "Runtime state"."""

from __future__ import annotations

import enum
import functools
import inspect
import sys
import threading
import types
import warnings

from magneton import _core
from magneton import call_site

# Objects never walked: reading them initializes a device (the cuFFT plan
# cache looks up the current CUDA device on any attribute).
_SKIP_KEYS = frozenset({"torch.backends.cuda.cufft_plan_cache"})
_SETTER_PREFIXES = ("set_", "enable_", "disable_", "allow_", "preferred_")
_SETTER_NAMES = ("flags",)
_MAX_DEPTH = 4


class _State:
    def __init__(self):
        self.torch = None
        self.hook = None
        self.native_keys: frozenset[str] = frozenset()
        self.specific: frozenset[int] = frozenset()  # ids of torch_state_setters' wrappers (they record their keys)
        self.readers: dict[str, object] = {}  # key -> zero-argument callable
        self.arg_values: dict[str, str] = {}  # torch.set_X with no getter: the arguments of its last call
        self.values: dict[str, str] = {}  # as last sent to the hook
        self.swapped: list[tuple[object, type]] = []  # (object, its original class)
        self.patched: list[tuple[object, str, object, bool]] = []  # (owner, name, original, was in its __dict__)
        self.watched_paths: dict[int, str] = {}  # id(watched object) -> its key prefix
        self.skip_dirs: tuple[str, ...] = ()
        self.torch_dir = ""
        self.lock = threading.RLock()
        self.busy = threading.local()


_state: _State | None = None


# -- values ------------------------------------------------------------------

def format_value(v) -> str | None:
    """A setting's value as a RuntimeState string, or None when it is not a simple one."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "None"
    if isinstance(v, enum.Enum):
        return str(v.name)
    if isinstance(v, (int, float, str)):
        return str(v)
    t = type(v)
    if hasattr(t, "__members__") and isinstance(getattr(v, "name", None), str):  # a pybind11 enum
        return v.name
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.dtype):
        return str(v).removeprefix("torch.")
    if torch is not None and isinstance(v, torch.device):
        return str(v)
    if isinstance(v, (list, tuple)) and len(v) <= 16:
        parts = [format_value(x) for x in v]
        if all(p is not None for p in parts):
            return "[" + ", ".join(parts) + "]"
    return None


def _quiet_call(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _warns(fn) -> bool:
    """Whether calling fn warns (a deprecated alias: its twin is read instead)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return bool(caught)


def _callable_without_args(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True  # a builtin without a signature: tried, and a TypeError drops it
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def _original(fn):
    return getattr(fn, "_magneton_original", fn)


# -- discovery ---------------------------------------------------------------

def _candidate_names(obj) -> list[str]:
    """Public names obj may answer: its own, its class's (properties,
    ContextProp descriptors), a torch PropModule's wrapped module's, and the
    string constants of a class __getattr__ (cuBLASModule answers its flags there)."""
    names = list(getattr(obj, "__dict__", {}))
    inner = getattr(obj, "__dict__", {}).get("m")
    if isinstance(inner, types.ModuleType):
        names += list(vars(inner))
    for cls in type(obj).__mro__:
        if cls in (object, types.ModuleType):
            continue
        names += list(vars(cls))
        getattr_fn = vars(cls).get("__getattr__")
        code = getattr(getattr_fn, "__code__", None)
        if code is not None:
            names += [c for c in code.co_consts if isinstance(c, str) and c.isidentifier()]
    return list(dict.fromkeys(n for n in names if not n.startswith("_") and not n.isupper()))


def _is_backends_object(v) -> bool:
    """A settings holder defined by torch.backends (cuda.matmul, mkldnn.conv), not a per-device container."""
    t = type(v)
    return (not isinstance(v, type) and t.__module__.startswith("torch.backends")
            and not hasattr(t, "__getitem__") and not callable(v))


def _function_reader(module, name: str, fn):
    """A module function that reads a setting: get_X; X_enabled / X_allowed
    with an enable_X / allow_X twin; preferred_X (called bare it reads)."""
    if name.startswith("get_"):
        return name[4:]
    for suffix, prefix in (("_enabled", "enable_"), ("_allowed", "allow_")):
        if name.endswith(suffix) and callable(getattr(module, prefix + name[: -len(suffix)], None)):
            return name
    if name.startswith("preferred_"):
        return name
    return None


def _discover(st: _State) -> tuple[dict[str, object], list[tuple[object, str]]]:
    """(key -> reader, [(watched object, key prefix)]) under torch.backends and for torch.set_X twins."""
    torch = st.torch
    readers: dict[str, object] = {}
    holders: list[tuple[object, str]] = []
    seen: set[int] = set()

    def add(key, reader):
        if key in st.native_keys or key in readers or key in _SKIP_KEYS:
            return
        try:
            if _warns(reader) or format_value(_quiet_call(reader)) is None:
                return
        except Exception:  # not readable here (a backend this build lacks)
            return
        readers[key] = reader

    def walk(obj, path, depth):
        if id(obj) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(obj))
        holders.append((obj, path))
        is_module = isinstance(obj, types.ModuleType)
        for name in _candidate_names(obj):
            key = f"{path}.{name}"
            if key in _SKIP_KEYS:
                continue
            try:
                v = _quiet_call(lambda: getattr(obj, name))
            except Exception:
                continue
            if isinstance(v, types.ModuleType):
                if getattr(v, "__name__", "") == key:  # a submodule, not an import
                    walk(v, key, depth + 1)
            elif isinstance(v, type):
                continue
            elif callable(v):
                field = _function_reader(obj, name, v) if is_module else None
                fn = _original(v)
                if field is not None and _callable_without_args(fn):
                    add(f"{path}.{field}", fn)
            elif format_value(v) is not None:
                add(key, lambda o=obj, n=name: getattr(o, n))
            elif _is_backends_object(v):
                walk(v, key, depth + 1)

    backends = getattr(torch, "backends", None)
    if backends is not None:
        walk(backends, "torch.backends", 0)
        for name, module in list(sys.modules.items()):  # submodules not reachable as attributes
            if (name.startswith("torch.backends.") and isinstance(module, types.ModuleType)
                    and not any(part.startswith("_") for part in name.split("."))):
                walk(module, name, name.count(".") - 1)
    for field, getter in _torch_twins(st).items():
        if getter is not None:
            add("torch." + field, getter)
    return readers, holders


def _torch_twins(st: _State) -> dict[str, object]:
    """torch.set_X (a function) -> its getter twin (get_X, is_X, is_X_enabled), or None without one."""
    torch = st.torch
    out = {}
    for name in dir(torch):
        if not name.startswith("set_"):
            continue
        setter = getattr(torch, name, None)
        field = name[4:]
        if isinstance(setter, type) or not callable(setter) or "autocast" in field:
            continue
        getter = None
        for candidate in ("get_" + field, "is_" + field, "is_" + field + "_enabled"):
            g = getattr(torch, candidate, None)
            if callable(g) and not isinstance(g, type):
                getter = g
                break
        out[field] = getter
    return out


# -- reading and publishing ----------------------------------------------------

def _read(st: _State) -> dict[str, str]:
    values = dict(st.arg_values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, reader in st.readers.items():
            try:
                text = format_value(reader())
            except Exception:
                continue
            if text is not None:
                values[key] = text
    return values


def refresh(rediscover: bool = False) -> dict[str, str]:
    """Re-reads every setting and hands the values to the hook; returns the
    keys whose value changed (new value) since the last read."""
    st = _state
    if st is None:
        return {}
    with st.lock:
        if rediscover:
            st.readers, holders = _discover(st)
            _watch(st, holders)
        new = _read(st)
        changed = {k: v for k, v in new.items() if st.values.get(k) != v}
        st.values = new
        st.hook.set_python_state(new)
        return changed


def current() -> dict[str, str]:
    return dict(_state.values) if _state is not None else {}


def _program_call(depth: int) -> bool:
    """Whether the frame `depth` above the caller is outside torch (the program's own call)."""
    st = _state
    try:
        caller = sys._getframe(depth + 1).f_code.co_filename
    except ValueError:
        return True
    return not caller.startswith(st.torch_dir)


def _note_change(changed: dict[str, str], record: bool, extra: dict[str, str] | None = None) -> None:
    """StateSetter rows: the keys a call changed, or (extra given: an
    assignment) the assigned key alone. Keys that follow another (assigning
    cuda.matmul.allow_tf32 changes cuda.matmul.fp32_precision too) get no row
    of their own there: the program's line set the one it names."""
    if not record or not _core.is_recording():
        return
    pairs = dict(extra) if extra else dict(changed)
    if not pairs:
        return
    where = call_site.user_site(_state.skip_dirs, depth=3)
    for key, value in pairs.items():
        _core.add_state_setter(key, value, where)


def _native() -> dict[str, str] | None:
    """The C++-read keys now (a few µs), to tell which of them a generic setter changed."""
    st = _state
    try:
        return dict(st.hook.native_state()) if st is not None else None
    except Exception:  # noqa: BLE001
        return None


def _after_change(record: bool, rediscover: bool = False, extra: dict[str, str] | None = None,
                  native_before: dict[str, str] | None = None) -> None:
    """Re-reads the settings; with record, adds the rows (_note_change). native_before:
    the C++-read keys before the call, whose changes get rows too (torch.backends.mkldnn.flags
    sets torch.backends.mkldnn.enabled, which no specific wrapper records)."""
    st = _state
    if st is None or getattr(st.busy, "on", False):
        return
    st.busy.on = True
    try:
        changed = refresh(rediscover)
        if native_before is not None and record:
            after = _native() or {}
            changed.update({k: v for k, v in after.items() if native_before.get(k) != v})
        _note_change(changed, record, extra)
    except Exception:  # never let the bookkeeping break the program's setter
        pass
    finally:
        st.busy.on = False


# -- watching assignments --------------------------------------------------------

def _watched_class(cls: type) -> type:
    def __setattr__(self, name, value):
        cls.__setattr__(self, name, value)
        st = _state
        if st is None or name.startswith("_"):
            return
        path = st.watched_paths.get(id(self))
        if path is None:
            return
        key = f"{path}.{name}"
        if isinstance(value, types.ModuleType):  # the import system binding a submodule: new keys, not a change
            _after_change(False, rediscover=True)
            return
        _after_change(_program_call(1), rediscover=key not in st.readers,
                      extra=_assigned(key, name, value, self))

    return type(cls.__name__, (cls,), {"__setattr__": __setattr__, "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__, "_magneton_watched": cls})


def _assigned(key: str, name: str, value, owner) -> dict[str, str]:
    """The assigned key's value as the program now reads it (recorded even when unchanged)."""
    try:
        text = format_value(_quiet_call(lambda: getattr(owner, name)))
    except Exception:
        text = format_value(value)
    return {key: text} if text is not None else {}


def _watch(st: _State, holders) -> None:
    for obj, path in holders:
        if id(obj) in st.watched_paths:
            continue
        cls = type(obj)
        if "_magneton_watched" in vars(cls):
            continue
        try:  # object's: cuBLASModule's own __setattr__ refuses any name it does not know
            object.__setattr__(obj, "__class__", _watched_class(cls))
        except (TypeError, AttributeError):  # a builtin class: its assignments are not seen
            continue
        st.swapped.append((obj, cls))
        st.watched_paths[id(obj)] = path
        if isinstance(obj, types.ModuleType):
            _wrap_module_setters(st, obj, path)


# -- wrapping setter functions ----------------------------------------------------

class _WatchedContext:
    """A settings context manager (torch.backends.X.flags(...)): the settings are re-read on enter and exit."""

    def __init__(self, inner, record: bool, native_rows: bool = True):
        self._inner, self._record, self._native_rows = inner, record, native_rows

    def __enter__(self):
        before = _native() if self._record and self._native_rows else None
        result = self._inner.__enter__()
        _after_change(self._record, native_before=before)
        return result

    def __exit__(self, *exc):
        suppress = self._inner.__exit__(*exc)
        _after_change(False)
        return suppress

    def __call__(self, func):
        """The decorator form (@torch.backends.cudnn.flags(...)): a fresh manager per call, as contextlib's."""
        recreate = getattr(self._inner, "_recreate_cm", None)
        if recreate is None:
            return self._inner(func)

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with _WatchedContext(recreate(), self._record, self._native_rows):
                return func(*args, **kwargs)

        return decorated

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _setter_wrapper(original, arg_key: str | None = None, rows: bool = True):
    """rows=False: refresh only (a setter whose own key torch_state_setters records).
    Over one of torch_state_setters' wrappers, the C++-read keys it changes are
    left to that wrapper's rows; over any other setter they get rows here."""
    native_rows = _state is None or id(original) not in _state.specific

    def wrapper(*args, **kwargs):
        record = rows and _program_call(1)
        before = _native() if record and native_rows else None
        result = original(*args, **kwargs)
        extra = None
        if arg_key is not None:
            text = _format_args(args, kwargs)
            if text is not None and _state is not None:
                _state.arg_values[arg_key] = text
                extra = {arg_key: text}  # the one key it sets
        if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
            return _WatchedContext(result, record, native_rows)
        _after_change(record, extra=extra, native_before=before)
        return result

    try:
        functools.update_wrapper(wrapper, original)
    except (AttributeError, TypeError):
        pass
    wrapper._magneton_original = _original(original)
    return wrapper


def _format_args(args, kwargs) -> str | None:
    parts = [format_value(a) for a in args] + [
        (f"{k}={t}" if (t := format_value(v)) is not None else None) for k, v in kwargs.items()]
    if not parts or any(p is None for p in parts):
        return None
    return ", ".join(parts)


def _patch(st: _State, owner, name: str, wrapper) -> None:
    own = name in getattr(owner, "__dict__", {})
    original = owner.__dict__[name] if own else getattr(owner, name)
    # object.__setattr__ skips the watching __setattr__ (this is not the program's assignment).
    object.__setattr__(owner, name, wrapper) if not isinstance(owner, types.ModuleType) else \
        types.ModuleType.__setattr__(owner, name, wrapper)
    st.patched.append((owner, name, original, own))


def _wrap_module_setters(st: _State, module, path: str) -> None:
    for name in _candidate_names(module):
        if not (name.startswith(_SETTER_PREFIXES) or name in _SETTER_NAMES):
            continue
        try:
            fn = getattr(module, name)
        except Exception:
            continue
        if isinstance(fn, type) or not callable(fn) or hasattr(fn, "_magneton_original"):
            continue
        _patch(st, module, name, _setter_wrapper(fn))


def _wrap_torch_setters(st: _State) -> None:
    for field, getter in _torch_twins(st).items():
        key = "torch." + field
        name = "set_" + field
        fn = getattr(st.torch, name)
        if hasattr(fn, "_magneton_original"):
            continue
        if getter is not None and key not in st.readers and key not in st.native_keys:
            continue  # a getter that gives no simple value (torch.get_rng_state): not a setting
        arg_key = key if getter is None and key not in st.native_keys else None
        _patch(st, st.torch, name, _setter_wrapper(fn, arg_key))
    # torch.use_deterministic_algorithms and its kind: their keys are C++-read
    # (torch_state_setters records them), but others follow (deterministic_debug_mode).
    for name in dir(st.torch):
        fn = getattr(st.torch, name, None)
        if (name.startswith("use_") and callable(fn) and not isinstance(fn, type)
                and not hasattr(fn, "_magneton_original")):
            _patch(st, st.torch, name, _setter_wrapper(fn, rows=False))


# -- lifecycle ---------------------------------------------------------------------

def install(torch, hook, specific=()) -> None:
    """Reads every setting once, hands them to the hook and wraps the setters.
    specific: the setters torch_state_setters wrapped (they record their own keys)."""
    global _state
    import os

    st = _State()
    st.torch, st.hook = torch, hook
    st.native_keys = frozenset(hook.native_state())
    st.specific = frozenset(id(f) for f in specific)
    st.torch_dir = os.path.dirname(torch.__file__) + os.sep
    st.skip_dirs = call_site.library_dirs(st.torch_dir)
    _state = st
    with st.lock:
        st.readers, holders = _discover(st)
        _watch(st, holders)
        _wrap_torch_setters(st)
    refresh()


def uninstall() -> None:
    global _state
    st = _state
    if st is None:
        return
    _state = None
    while st.patched:
        owner, name, original, own = st.patched.pop()
        setter = types.ModuleType.__setattr__ if isinstance(owner, types.ModuleType) else object.__setattr__
        if own:
            setter(owner, name, original)
        else:
            try:
                delete = types.ModuleType.__delattr__ if isinstance(owner, types.ModuleType) else object.__delattr__
                delete(owner, name)
            except AttributeError:
                pass
    while st.swapped:
        obj, cls = st.swapped.pop()
        try:
            object.__setattr__(obj, "__class__", cls)
        except (TypeError, AttributeError):
            pass
    st.hook.set_python_state({})
