"""The environment a recorded program ran under, snapshotted at start, when a
framework is imported, and at stop (docs/TRACE_FORMAT.md, "Environment").

Which names: those the program's code read. Native code's reads are noted by
the getenv interposer that ``magneton record`` preloads
(``native_env_names_read``); Python's reads through ``os.environ`` /
``os.getenv`` are noted here. The interposer does not supersede the list of
ML prefixes (``_ENV_PREFIXES``): it cannot see ``secure_getenv``, glibc's own
reads, or a library that walks ``environ`` itself, and without it
(``magneton.record()`` inside a script) native reads are not seen at all; so
every set name with one of those prefixes is stored as well. A name is stored once as
``env.NAME`` (source ``env``) with its value when first seen; a later
snapshot that finds another value stores ``env.NAME@<snapshot>`` (source
``env_change``). With the interposer, a prefix-matched name the program never
read is stored by name only (value ``<set, not read>``). Values are redacted
by the trace writer (secret-looking names, URL credentials, token-shaped
values: trace/redact.h)."""

from __future__ import annotations

import json
import os

from magneton import _core

# The fallback without the interposer: names that change how ML frameworks execute.
_ENV_PREFIXES = ("OMP_", "MKL_", "KMP_", "CUDA_", "PYTORCH_", "TORCH_", "CUBLAS_", "NCCL_", "HF_",
                 "TRANSFORMERS_", "ORT_", "XLA_", "JAX_", "GGML_", "LLAMA_", "OPENBLAS_", "ONEDNN_", "DNNL_",
                 "TF_")
# Magneton's own control variables and what it sets for the child.
_OWN = ("MAGNETON_",)
_OWN_NAMES = {"LD_PRELOAD"}
# What a set variable the program never read is stored as: its name only.
_NOT_READ = "<set, not read>"

_python_reads: set[str] = set()
_stored: dict[str, str] = {}
_snapshots: dict[str, dict[str, int]] = {}
_original_getitem = None
_original_iter = None
_noting = True
_bulk = 0  # live iterations over os.environ: a copy (dict(os.environ)) reads every name, none in particular


def _note_python_reads() -> None:
    global _original_getitem, _original_iter
    if _original_getitem is not None:
        return
    environ_type = type(os.environ)
    original, original_iter = environ_type.__getitem__, environ_type.__iter__

    def __getitem__(self, key):
        if _noting and not _bulk and self is os.environ and isinstance(key, str):
            _python_reads.add(key)
        return original(self, key)

    def __iter__(self):
        global _bulk
        _bulk += 1
        try:
            yield from original_iter(self)
        finally:
            _bulk -= 1

    environ_type.__getitem__ = __getitem__
    environ_type.__iter__ = __iter__
    _original_getitem, _original_iter = original, original_iter


def start() -> None:
    """At recording start: forget the last recording's names, take the first snapshot."""
    _stored.clear()
    _snapshots.clear()
    _note_python_reads()
    snapshot("start")


def stop() -> None:
    snapshot("stop")
    global _original_getitem, _original_iter
    if _original_getitem is not None:
        type(os.environ).__getitem__ = _original_getitem
        type(os.environ).__iter__ = _original_iter
        _original_getitem = _original_iter = None
    _python_reads.clear()


def snapshot(name: str) -> None:
    """Stores the names read so far that are set, and values changed since."""
    global _noting
    native = _core.native_env_names_read()
    _noting = False
    try:
        environ = dict(os.environ)
    finally:
        _noting = True
    prefixed = {k for k in environ if k.startswith(_ENV_PREFIXES)}
    names = prefixed | _python_reads
    read = set(_python_reads)
    if native is None:
        source_of_names = "prefix list and os.environ reads (no getenv interposer: not started by `magneton record`)"
        dropped = 0
    else:
        names |= set(native[0])
        read |= set(native[0])
        source_of_names = "getenv interposer, os.environ reads and prefix list"
        dropped = native[1]
    new = changed = 0
    for key in sorted(names):
        if key.startswith(_OWN) or key in _OWN_NAMES or key not in environ:
            continue
        value = environ[key]
        if native is not None and key not in read:
            # A prefix-matched name the program has not read (the interposer
            # sees the reads): stored by name only, and only at stop — a
            # later read stores its value then. Its value cannot have mattered.
            if name != "stop" or key in _stored:
                continue
            value = _NOT_READ
        if key not in _stored:
            _core.set_config("env." + key, value, "env")
            new += 1
        elif _stored[key] != value:
            _core.set_config(f"env.{key}@{name}", value, "env_change")
            changed += 1
        _stored[key] = value
    _snapshots[name] = {"new": new, "changed": changed}
    _core.set_meta("env.snapshots", json.dumps(_snapshots))
    _core.set_meta("env.names_from", source_of_names)
    if dropped:
        _core.set_meta("env.names_dropped", str(dropped))
