"""The public recording API: ``with magneton.record("run.mtrace"): ...``."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import threading

from magneton import _core
from magneton import config_snapshot
from magneton import env_snapshot
from magneton import window as _window

_lock = threading.Lock()
_recorders: list = []  # the installed recorders (magneton.recorders.registry)
_recorders_said: list[dict] = []  # what each registered recorder said at start (meta "recorders")
_import_paths_at_start: list[str] = []


def _framework_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in ("torch", "transformers", "onnxruntime", "onnx", "jax", "llama_cpp", "numpy"):
        mod = sys.modules.get(name)
        if mod is not None and hasattr(mod, "__version__"):
            versions[name] = str(mod.__version__)
    return versions


def _engines(recorders) -> str:
    """The engines that recorded ops, e.g. "jax" or "pytorch,onnxruntime";
    "pytorch" when none did (the recorder's default)."""
    names: list[str] = []
    for r in recorders:
        names += [n for n in r.engines() if n not in names]
    return ",".join(names) or "pytorch"


def _import_paths(extra=()) -> list[str]:
    """Where the recorded program's Python source lives (meta
    ``python.sys_path``): a report shows source lines only from files under
    these folders or the working directory. The script's folder is not yet in
    ``sys.path`` when ``sitecustomize`` starts recording, so it is added."""
    paths = [os.path.abspath(p or os.curdir) for p in [*extra, *sys.path]]
    if sys.argv and sys.argv[0] and os.path.isfile(sys.argv[0]):
        paths.append(os.path.dirname(os.path.abspath(sys.argv[0])))
    return list(dict.fromkeys(paths))


def start(path: str | os.PathLike, label: str | None = None, command_line: str | None = None,
          energy: bool = True, values: bool = False, window: str | None = None,
          start_after: float | None = None, duration: float | None = None,
          rerun_plan: str | None = None) -> None:
    """Starts recording every supported framework's ops into ``path``; with
    ``energy``, also samples the meters ``magneton meters`` reports; with
    ``values``, fingerprints every tensor value (for matching), never stores it.

    window: ``"wait,warmup,active[,repeat]"`` in steps (``magneton.step()``,
    else optimizer and decode steps): only active steps are recorded, as with
    torch.profiler's schedule. start_after / duration: seconds from now before
    the window opens / for which it stays open. Outside the window an op costs
    a flag check (docs/ARCHITECTURE.md, "Windowed recording")."""
    from magneton.recorders import base, registry

    path = os.fspath(path)
    with _lock:
        if _core.is_recording():
            raise RuntimeError("a Magneton recording is already active")
        if label is None:
            label = os.path.splitext(os.path.basename(path))[0]
        if rerun_plan is None and command_line is None:
            # A script that calls magneton.start() itself: its re-run is this
            # interpreter with these arguments, here (trace/rerun_plan.h).
            rerun_plan = json.dumps({"argv": [sys.executable, *sys.argv], "cwd": os.getcwd(), "env": {},
                                     "interpreter": sys.executable, "version": 1},
                                    sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if command_line is None:
            command_line = shlex.join([sys.executable, *sys.argv])
        if os.environ.get("MAGNETON_ENERGY") == "0":
            energy = False
        _core.start_recording(path, label, command_line, "pytorch", _framework_versions(), energy, values,
                              rerun_plan or "")
        try:
            _import_paths_at_start[:] = _import_paths()
            _core.set_meta("python.sys_path", json.dumps(_import_paths_at_start))
            config_snapshot.record_process_config()
            made, said = registry.create_available(base.RecordOptions(values=values, energy=energy))
            _recorders_said[:] = said
            _core.set_meta("recorders", json.dumps(said, sort_keys=True, separators=(",", ":")))
            for rec in made:
                rec.install()
                _recorders.append(rec)
            _window.configure(window, start_after, duration)
        except BaseException:
            while _recorders:
                _recorders.pop().uninstall()
            _window.reset()
            _core.stop_recording()
            raise


def step() -> None:
    """Marks the end of one step of the job; see ``magneton.window.step``."""
    _window.step()


def stop() -> None:
    """Stops the active recording and closes its trace file."""
    with _lock:
        if not _core.is_recording():
            return
        # Uninstall first: some engines (ONNX Runtime) write their ops only then.
        stopped = list(_recorders)
        _window.reset()
        while _recorders:
            _recorders.pop().uninstall()
        env_snapshot.stop()
        _core.set_meta("engine", _engines(stopped))
        hooked = {r.name: r.engines() for r in stopped}
        for row in _recorders_said:
            row["recorded_ops"] = bool(hooked.get(row["name"]))
        _core.set_meta("recorders", json.dumps(_recorders_said, sort_keys=True, separators=(",", ":")))
        # Versions of frameworks imported after start() are known only now.
        for name, version in _framework_versions().items():
            _core.set_meta("version." + name, version)
        # Folders the program added to sys.path while it ran.
        _core.set_meta("python.sys_path", json.dumps(_import_paths(_import_paths_at_start)))
        from magneton.recorders import registry

        for line in registry.missed(_recorders_said):
            print(f"magneton: {line}", file=sys.stderr)
        _core.stop_recording()


@contextlib.contextmanager
def record(path: str | os.PathLike, label: str | None = None, energy: bool = True, values: bool = False,
           window: str | None = None, start_after: float | None = None, duration: float | None = None):
    """Records the ops run inside the block into the trace file ``path``
    (the options are ``start``'s)."""
    start(path, label=label, energy=energy, values=values, window=window, start_after=start_after,
          duration=duration)
    try:
        yield
    finally:
        stop()
