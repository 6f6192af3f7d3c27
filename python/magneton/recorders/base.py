"""The recorder interface: what every engine recorder is and says about itself.

A recorder hooks one framework or runtime (PyTorch, ONNX Runtime, JAX,
llama.cpp, ...) for the time a recording is active and announces that
engine's ops, their tensors and the runtime state they ran under to the C++
recorder (``magneton._core`` and the engine's own native hook). The registry
(``magneton.recorders.registry``) holds one factory per recorder; ``magneton
record`` creates every registered recorder whose ``availability`` is true and
installs it (docs/ARCHITECTURE.md, "Recorders"; CONTRIBUTING.md, "Adding a
recorder").

The models are Kineto's ``IActivityProfiler`` plug-ins (a name, an
availability check, start/stop, the activity kinds it yields), Perfetto's
importer registry and Zeus's device classes.

Contract:
- ``availability()`` is cheap and never imports the framework (a recording
  starts before the user's program imports anything): it says whether the
  recorder could hook here and, when not, why.
- ``install()`` hooks now when the framework is already imported, else right
  after the program imports it (``when_imported``); it must never break the program's own import
  (a hook that cannot load says why in the trace's meta and on stderr).
- ``uninstall()`` restores everything ``install`` changed and writes what it
  still holds (an engine that reports its ops at the end writes them here).
- ``engines()`` names the engines that recorded ops in this recording (the
  trace's ``engine`` meta), empty when the program never used the framework.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import ClassVar


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a recorder records. Each field is a short phrase, "" when it does
    not record that (listed by ``magneton recorders`` and stored in the
    trace's ``recorders`` meta)."""

    ops: str = ""  # which ops: "every ATen op", "every graph node", ...
    tensors: str = ""  # op inputs and outputs (shape, dtype, layout, buffer identity)
    values: str = ""  # value fingerprints with --values
    runtime_state: str = ""  # the settings each op ran under
    device_activity: str = ""  # GPU kernels, copies
    compiled: str = ""  # compiled or captured programs (jit, torch.compile, graphs)
    integration: str = ""  # how it hooks: a C++ module, Python + _core, ingest at stop, a C ABI callback

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v}


@dataclasses.dataclass(frozen=True)
class Availability:
    """Whether a recorder can hook here; ``reason`` says why not, or what it
    will hook."""

    ok: bool
    reason: str


@dataclasses.dataclass(frozen=True)
class RecordOptions:
    """The recording's options a recorder may need."""

    values: bool = False  # fingerprint tensor values (--values)
    energy: bool = True


def module_present(name: str) -> bool:
    """Whether ``name`` can be imported, without importing it (a dotted name
    imports its parents only)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback right after a module is first imported, so that
    `magneton record` can hook torch without importing it eagerly."""

    def __init__(self, name: str, callback):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        callback = self.callback

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                callback(module)

        spec.loader = _Loader()
        return spec


class Recorder(abc.ABC):
    """One engine's recorder; see the module docstring for the contract."""

    name: ClassVar[str]  # the recorder's name: "pytorch", "onnxruntime", "jax", "llama.cpp"
    framework: ClassVar[str]  # the top-level module it hooks ("torch")

    def __init__(self, options: RecordOptions | None = None):
        self.options = options or RecordOptions()
        self._import_hooks: list[AfterImport] = []
        self._patches: list[tuple[object, str, object]] = []  # (owner, attribute, original), in patch order

    def when_imported(self, module: str, callback, ready=None) -> None:
        """Runs ``callback(module object)`` now when ``module`` is imported (and
        ``ready(module object)`` holds, for a package still running its own
        ``__init__``), else right after the program imports it."""
        found = sys.modules.get(module)
        if found is not None and (ready is None or ready(found)):
            callback(found)
            return
        hook = AfterImport(module, callback)
        self._import_hooks.append(hook)
        sys.meta_path.insert(0, hook)

    def patch(self, owner, attr: str, replacement) -> None:
        """Sets ``owner.attr`` to ``replacement`` until ``restore_patches``."""
        self._patches.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, replacement)

    def restore_patches(self) -> None:
        """Puts back every attribute ``patch`` replaced, last first."""
        for owner, attr, original in reversed(self._patches):
            setattr(owner, attr, original)
        self._patches.clear()

    def remove_import_hooks(self) -> None:
        """Takes back the ``when_imported`` hooks that have not fired."""
        for hook in self._import_hooks:
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
        self._import_hooks.clear()

    @classmethod
    def availability(cls) -> Availability:
        """By default: the framework's module can be imported."""
        if module_present(cls.framework):
            return Availability(True, f"hooks {cls.framework} when the program imports it")
        return Availability(False, f"{cls.framework} is not installed in this Python environment")

    @classmethod
    @abc.abstractmethod
    def capabilities(cls) -> Capabilities: ...

    @abc.abstractmethod
    def install(self) -> None: ...

    @abc.abstractmethod
    def uninstall(self) -> None: ...

    @abc.abstractmethod
    def engines(self) -> list[str]: ...
