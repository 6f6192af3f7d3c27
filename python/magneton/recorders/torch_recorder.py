"""PyTorch hooks: the C++ RecordFunction callback (every ATen op) plus global
nn.Module hooks that name the module scope each op runs in."""

from __future__ import annotations

import sys

from magneton import _core
from magneton import config_snapshot
from magneton import env_snapshot
from magneton import overrides
from magneton import window
from magneton.recorders import gpu_activity, torch_cuda_graphs
from magneton.recorders import torch_compile_kernels
from magneton.recorders.base import Availability, Capabilities, Recorder, RecordOptions, module_present
from magneton.recorders import torch_module_origins


def _load_hook():
    import torch

    try:
        from magneton import _torch_hook
    except ImportError as exc:
        raise ImportError(
            "magneton was built without its PyTorch hook, or against another torch "
            f"(now {torch.__version__}): reinstall with `pip install --no-build-isolation .` "
            f"in an environment where torch imports ({exc})"
        ) from exc
    built = _torch_hook.TORCH_VERSION_BUILT
    if built.split("+")[0] != torch.__version__.split("+")[0]:
        raise ImportError(
            f"magneton's PyTorch hook was built against torch {built} but torch {torch.__version__} "
            "is installed: reinstall magneton with `pip install --no-build-isolation .`"
        )
    return _torch_hook


class TorchRecorder(Recorder):
    name = "pytorch"
    framework = "torch"

    @classmethod
    def availability(cls) -> Availability:
        if not module_present("torch"):
            return Availability(False, "torch is not installed in this Python environment")
        if not module_present("magneton._torch_hook"):
            return Availability(False, "magneton was built without its PyTorch hook (torch was not importable "
                                       "at build time): reinstall with `pip install --no-build-isolation .`")
        return Availability(True, "hooks torch when the program imports it (the hook checks its torch version then)")

    @classmethod
    def capabilities(cls) -> Capabilities:
        return Capabilities(
            ops="every ATen op (RecordFunction), in nn.Module scopes",
            tensors="inputs and outputs: shape, dtype, strides, storage",
            values="fingerprints of every tensor with --values",
            runtime_state="torch.backends.* and torch get/set flags, by introspection",
            device_activity="GPU kernels, copies and fills through Kineto (CUDA builds with a GPU); CUDA graph "
                            "replays with their kernels, linked to the captured ops",
            compiled="torch.compile: each Inductor kernel an op (inductor::<kernel>) with its buffers and the FX "
                     "nodes / ATen ops it fuses; each Dynamo compile a torch.compile::compile region with its options",
            integration="C++ module built against torch (magneton._torch_hook)")

    def __init__(self, options: RecordOptions | None = None):
        super().__init__(options)
        self._hook = None
        self._names: dict[int, dict[int, str]] = {}  # id(parent) -> {id(child): attr name}
        self._roots_seen: set[int] = set()
        self._orig_generate = None
        self._ops_recorded = 0
        self._optimizer_hook = None
        self._gpu = gpu_activity.GpuActivity()

    # -- lifecycle -----------------------------------------------------------
    def install(self) -> None:
        self.when_imported("torch", lambda _m: self._install_torch())
        self.when_imported("transformers", lambda _m: self._wrap_generate())

    def engines(self) -> list[str]:
        return ["pytorch"] if self._ops_recorded else []

    def uninstall(self) -> None:
        if self._hook is not None:
            self._ops_recorded = self._hook.ops_recorded()
        self.remove_import_hooks()
        if self._optimizer_hook is not None:
            self._optimizer_hook.remove()
            self._optimizer_hook = None
        if self._hook is not None:
            import torch

            from magneton.recorders import torch_dist_groups, torch_state_setters, torch_values

            torch_state_setters.uninstall()
            torch_dist_groups.uninstall()
            torch_compile_kernels.uninstall()
            torch_module_origins.uninstall(torch)
            self._hook.set_enabled(True)
            torch_cuda_graphs.uninstall()
            torch_values.uninstall_graph_capture_bracket()
            self._hook.uninstall()
            self._hook = None
            # Every op is recorded now: the device activity is linked to them.
            self._gpu.stop()
            _core.clear_module_scopes()
        if self._orig_generate is not None:
            from transformers.generation.utils import GenerationMixin

            GenerationMixin.generate = self._orig_generate
            self._orig_generate = None

    def _install_torch(self) -> None:
        import torch

        from magneton.recorders import torch_dist_groups, torch_state_setters, torch_values

        self._hook = _load_hook()
        overrides.active().apply_global_flags()  # --confirm re-runs only
        config_snapshot.record_torch_flags()
        env_snapshot.snapshot("import:torch")  # what torch's native libraries read as they loaded
        torch_state_setters.install(torch, self._hook)
        torch_values.install_graph_capture_bracket(torch, self._hook)
        torch_module_origins.install(torch)
        for attr in ("_wrapped_call_impl", "_call_impl"):
            fn = getattr(torch.nn.Module, attr, None)
            if fn is not None:
                _core.add_module_call_code(fn.__code__)
                break
        _core.set_scope_namer(self._scope_name)
        torch_dist_groups.install(self._hook)
        torch_compile_kernels.install(torch, self._hook)
        self._hook.install()
        hook = self._hook
        window.add_listener(lambda open_now: hook.set_enabled(open_now))
        # A training loop's steps, for --window, until the program calls magneton.step() itself.
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook
        except ImportError:  # an older torch: steps come from magneton.step() only
            register_optimizer_step_post_hook = None
        if register_optimizer_step_post_hook is not None:
            self._optimizer_hook = register_optimizer_step_post_hook(lambda _opt, _a, _kw: window.auto_step())
        self._gpu.start(torch)
        if self._gpu.active:  # CUDA graph captures and replays as ops, for the device activity's link
            torch_cuda_graphs.install(torch)

    # -- module scopes ---------------------------------------------------------
    # The C++ frame walk finds module calls (frames of Module._wrapped_call_impl)
    # on the stack of each op; this names a module the first time a stack
    # with it is seen, relative to the module whose call encloses it.
    # With how the module was constructed, when that was seen (torch_module_origins).
    def _scope_name(self, parent, module):
        name = self._plain_scope_name(parent, module)
        made = torch_module_origins.origin(module)
        return name if made is None else (name, made[0], made[1])

    def _plain_scope_name(self, parent, module) -> str:
        if parent is None:
            name = type(module).__name__
            if id(module) not in self._roots_seen:
                self._roots_seen.add(id(module))
                overrides.active().apply_model_config(name, module)  # --confirm re-runs only
                config_snapshot.record_model_config(name, module)
            return name
        # Through containers that are never called (ModuleList "h" -> "h.0").
        names = self._names.get(id(parent))
        if names is None or id(module) not in names:
            names = {id(m): n for n, m in parent.named_modules() if m is not parent}
            self._names[id(parent)] = names
        return names.get(id(module), type(module).__name__)

    # -- HF generate arguments -------------------------------------------------
    def _wrap_generate(self) -> None:
        try:
            from transformers.generation.utils import GenerationMixin
        except Exception:
            return
        original = GenerationMixin.generate
        self._orig_generate = original

        def generate(model, *args, **kwargs):
            kwargs = overrides.active().apply_call_args("generate", kwargs)  # --confirm re-runs only
            if _core.is_recording():
                try:
                    config_snapshot.record_call_args("generate", kwargs)
                except RuntimeError:
                    # magneton.stop() on another thread between the check and
                    # the write: nothing to record into, and not the caller's error.
                    if _core.is_recording():
                        raise
            # Decode steps, for --window: each forward of the model after the first (the prompt's).
            forwards = [0]

            def decode_step(_module, _args):
                forwards[0] += 1
                if forwards[0] > 1:
                    window.auto_step()

            handle = model.register_forward_pre_hook(decode_step) if _core.is_recording() else None
            try:
                return original(model, *args, **kwargs)
            finally:
                if handle is not None:
                    handle.remove()

        generate.__wrapped__ = original
        GenerationMixin.generate = generate
