"""The registry of recorders: one entry per engine, in the order they install.

Magneton's own recorders are registered here; another package adds one with
``register(MyRecorder)`` at import, or without code on our side through the
``magneton.recorders`` entry-point group of its distribution (the entry point
names a ``Recorder`` subclass). Entry points come from packages installed in
the user's own environment, never from a trace. ``python -m
magneton.recorders`` (``magneton recorders``) lists every registered recorder,
whether it can run here and why not, and what it records.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata

from magneton.recorders.base import Availability, Recorder, RecordOptions

ENTRY_POINT_GROUP = "magneton.recorders"

_registered: dict[str, type[Recorder]] = {}
_entry_points_loaded = [False]
_entry_point_errors: list[str] = []


def register(cls: type[Recorder], replace: bool = False) -> type[Recorder]:
    """Adds a recorder class; usable as a class decorator. A second class
    under a taken name is refused unless ``replace``."""
    if not (isinstance(cls, type) and issubclass(cls, Recorder)):
        raise TypeError(f"{cls!r} is not a magneton.recorders.base.Recorder subclass")
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        raise ValueError(f"recorder {cls.__qualname__} has no name")
    if name in _registered and _registered[name] is not cls and not replace:
        raise ValueError(f"a recorder named {name!r} is already registered ({_registered[name].__qualname__})")
    _registered[name] = cls
    return cls


def unregister(name: str) -> None:
    _registered.pop(name, None)


def _register_builtin() -> None:
    from magneton.recorders import jax_recorder, llama_recorder, ort_recorder, tf_recorder, torch_recorder

    for cls in (torch_recorder.TorchRecorder, ort_recorder.OrtRecorder, jax_recorder.JaxRecorder,
                llama_recorder.LlamaRecorder, tf_recorder.TfRecorder):
        register(cls, replace=True)


def _load_entry_points() -> None:
    """Third-party recorders; one that fails to load is reported, never fatal."""
    if _entry_points_loaded[0]:
        return
    _entry_points_loaded[0] = True
    try:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # a broken distribution's metadata
        _entry_point_errors.append(f"entry points unreadable: {exc}")
        return
    for ep in found:
        try:
            register(ep.load())
        except Exception as exc:
            _entry_point_errors.append(f"{ep.name} ({ep.value}): {exc}")


def recorders() -> list[type[Recorder]]:
    """Every registered recorder class, built-in ones first."""
    if not _registered:
        _register_builtin()
    _load_entry_points()
    return list(_registered.values())


def selected_names() -> set[str] | None:
    """``MAGNETON_RECORDERS`` (``magneton record --recorders``): a comma list
    of recorder names to install; None installs every available one."""
    text = os.environ.get("MAGNETON_RECORDERS", "").strip()
    if not text:
        return None
    return {n.strip() for n in text.split(",") if n.strip()}


def availability(cls: type[Recorder], only: set[str] | None) -> Availability:
    if only is not None and cls.name not in only:
        return Availability(False, "not selected (MAGNETON_RECORDERS / --recorders)")
    try:
        return cls.availability()
    except Exception as exc:  # a recorder's own check failed: it does not run
        return Availability(False, f"availability check failed: {exc}")


def create_available(options: RecordOptions) -> tuple[list[Recorder], list[dict]]:
    """The recorders to install for one recording, and what each said (the
    trace's ``recorders`` meta: name, available, reason)."""
    only = selected_names()
    classes = recorders()
    if only is not None:
        unknown = sorted(only - {c.name for c in classes})
        if unknown:
            raise ValueError(f"unknown recorder(s) {', '.join(unknown)}; registered: "
                             f"{', '.join(c.name for c in classes)}")
    made, said = [], []
    for cls in classes:
        avail = availability(cls, only)
        said.append({"name": cls.name, "framework": cls.framework, "available": avail.ok, "reason": avail.reason})
        if avail.ok:
            made.append(cls(options))
    for error in _entry_point_errors:
        said.append({"name": "?", "available": False, "reason": f"entry point failed to load: {error}"})
    return made, said


def missed(said: list[dict]) -> list[str]:
    """The program imported a framework whose recorder could not run: its
    ops are missing from the trace, which must be said, not left silent."""
    return [f"{row['framework']} was imported but not recorded: {row['reason']}" for row in said
            if not row["available"] and row.get("framework") in sys.modules]


def describe() -> list[dict]:
    """Every registered recorder: name, framework, availability, capabilities."""
    only = selected_names()
    out = []
    for cls in recorders():
        avail = availability(cls, only)
        out.append({"name": cls.name, "framework": cls.framework, "available": avail.ok, "reason": avail.reason,
                    "capabilities": cls.capabilities().as_dict()})
    for error in _entry_point_errors:
        out.append({"name": "?", "framework": "?", "available": False,
                    "reason": f"entry point failed to load: {error}", "capabilities": {}})
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rows = describe()
    if "--json" in argv:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        state = "available" if row["available"] else "unavailable"
        print(f"{row['name']:<12} {state:<12} {row['reason']}")
        for key, text in row["capabilities"].items():
            print(f"{'':<12} {key.replace('_', ' ') + ':':<16} {text}")
    return 0 if any(r["available"] for r in rows) else 1
