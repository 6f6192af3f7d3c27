"""torch.compile programs as they run (docs/ARCHITECTURE.md, "torch.compile").

Three things, all installed lazily the first time torch.compile is used:

- Each kernel of a loaded Inductor wrapper module (the module globals
  `cpp_fused_tanh_0 = async_compile.cpp_pybinding([...], '''...''')`,
  `triton_poi_fused_0 = async_compile.triton(...)`) is wrapped so that every
  call is an op, `inductor::<kernel name>`, with the buffers it reads as
  inputs and the buffers it writes as outputs. Tensors are converted in C++
  (`_torch_hook.begin_kernel_op`), as an ATen op's are. The op's args hold
  the kernel's provenance: the FX source nodes and original ATen ops it fuses
  and the user source lines they came from, where Inductor compiled the kernel
  in this process (an FX-graph cache hit brings back the code without it).
- Each Dynamo compilation is an op, `torch.compile::compile`, from Dynamo's
  compile-start callback to its compile-end callback: the Dynamo trace, AOT,
  Inductor and the C++ compile run inside it, so their time and energy are
  the compile's, never the first call's. Its args: the torch.compile call's
  options (dynamic, mode, backend, fullgraph, options), the compile id and
  Dynamo's recompilation reason (the first guard that failed). Its call path
  is the line that called torch.compile: where the options were chosen.
- torch.compile's wrapper RecordFunctions ("Torch-Compiled Region: 0/0",
  "TorchDynamo Cache Lookup", ...) carry no tensors; they are recorded as
  scopes (not ops), so the kernels and extern ATen calls inside them are the
  program's top-level ops with their dataflow.
"""

from __future__ import annotations

import re
import sys
import threading

from magneton import _core

KERNEL_OP_PREFIX = "inductor::"
COMPILE_OP = "torch.compile::compile"

# Schema-less RecordFunction events of torch.compile that only bracket other
# ops (no tensors): recorded as scopes. Prefixes ("Torch-Compiled Region: 0/0").
SCOPE_EVENTS = (
    "Torch-Compiled Region",
    "TorchDynamo Cache Lookup",
    "CompiledFunction",
    "CompiledFunctionBackward",
    "## Call CompiledFxGraph",
    "PythonDispatchMode",
    "inductor_codecache_torch_key",
)

# Frames between the user's line and a kernel or compile: left out of call paths.
_SKIPPED_PATHS = ("magneton/recorders/torch_compile_kernels", "torch/_dynamo/", "torch/_inductor/", "torch/_functorch/", "torch/fx/", "torchinductor_")

_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(cpp_pybinding|cpp|triton)\(", re.M)
_CPP_SIGNATURE = re.compile(r'extern "C"[^(]*\bkernel\(([^)]*)\)')
_TRITON_SIGNATURE = re.compile(r"^def (\w+)\(([^)]*)\)", re.M)
_TRITON_MUTATED = re.compile(r"'mutated_arg_names': \[([^\]]*)\]")
_STACK_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


class _State:
    def __init__(self):
        self.hook = None
        self.installed = False
        self.patches: list[tuple[object, str, object]] = []
        self.provenance: dict[str, dict] = {}  # kernel name -> what it fuses, from define_kernel
        # id(fn, module or code) -> (it, its torch.compile options), until the recording stops
        self.options_by_id: dict[int, tuple[object, dict]] = {}
        self.last_options: dict | None = None
        self.local = threading.local()
        self.callbacks: list = []
        self.kernel_ops = 0


_state = _State()


def install(torch, hook) -> None:
    """Wraps torch.compile (cheap); the rest is installed on its first call,
    or now if Dynamo is already imported."""
    _state.hook = hook
    hook.set_scope_events(list(SCOPE_EVENTS))
    original = torch.compile
    if getattr(original, "__magneton_wrapped__", False):
        return
    import inspect

    signature = inspect.signature(original)

    def compile(*args, **kwargs):  # noqa: A001 - torch.compile's own name
        _install_runtime(torch)
        out = original(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments
            model = given.get("model")
            options = {k: _option_text(given.get(k)) for k in ("dynamic", "mode", "backend", "fullgraph", "options")}
            # Where torch.compile was called (the compile regions' call path: where the options were chosen).
            options["_site"] = _call_site()
            _state.last_options = options
            if _core.is_recording():  # the options as call arguments too (config rows of kind call_arg)
                from magneton import config_snapshot

                config_snapshot.record_call_args(
                    "torch.compile", {k: v for k, v in options.items() if k != "_site" and k != "options"})
            if model is None and callable(out):
                # `@torch.compile(dynamic=False)`: torch returns a decorator
                # that compiles through torch's own module-level name, not
                # this wrapper; the options reach the function it decorates
                # through this one.
                return _decorator_keeping(out, options)
            _remember_options(out, model, options)
        except Exception:  # noqa: BLE001 - bookkeeping never breaks the user's compile
            pass
        return out

    compile.__wrapped__ = original
    compile.__magneton_wrapped__ = True
    compile.__doc__ = original.__doc__
    _state.patches.append((torch, "compile", original))
    torch.compile = compile
    if "torch._dynamo" in sys.modules:
        _install_runtime(torch)


def uninstall() -> None:
    for owner, name, original in reversed(_state.patches):
        setattr(owner, name, original)
    _state.patches.clear()
    if _state.callbacks:
        try:
            from torch._dynamo.callback import callback_handler

            start, end = _state.callbacks
            callback_handler.remove_start_callback(start)
            callback_handler.remove_end_callback(end)
        except Exception:  # noqa: BLE001
            pass
        _state.callbacks.clear()
    if _state.hook is not None:
        _state.hook.set_scope_events([])
    _state.installed = False
    _state.provenance.clear()
    _state.options_by_id.clear()
    _state.last_options = None


def _remember_options(compiled, model, options: dict) -> None:
    for obj in (compiled, model, getattr(model, "__code__", None)):
        if obj is not None:  # the object kept with its id: an id is only unique while it lives
            _state.options_by_id[id(obj)] = (obj, options)


def _decorator_keeping(decorator, options: dict):
    import functools

    @functools.wraps(decorator)
    def apply(model):
        compiled = decorator(model)
        try:
            _remember_options(compiled, model, options)
        except Exception:  # noqa: BLE001
            pass
        return compiled

    return apply


def kernel_ops_begun() -> int:
    return _state.kernel_ops


def _option_text(v):
    if v is None:
        return "None"
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _option_text(x) for k, x in v.items()}
    return getattr(v, "__name__", None) or type(v).__name__


def _call_site():
    """(generation, call path id) of the Python stack here, for a later op."""
    try:
        return _state.hook.call_path_here()
    except Exception:  # noqa: BLE001
        return None


def _patch(owner, name, make):
    original = getattr(owner, name)
    _state.patches.append((owner, name, original))
    setattr(owner, name, make(original))


def _install_runtime(torch) -> None:
    if _state.installed:
        return
    _state.installed = True
    for part in _SKIPPED_PATHS:
        _core.add_skipped_code_path(part)
    try:
        _install_compile_region()
    except Exception:  # noqa: BLE001 - another torch: no compile region
        pass
    try:
        _install_kernel_wrapping()
    except Exception:  # noqa: BLE001 - another torch: no kernel ops
        pass


# -- the compile region --------------------------------------------------------
def _install_compile_region() -> None:
    from torch._dynamo import convert_frame
    from torch._dynamo.callback import callback_handler

    local = _state.local
    hook = _state.hook

    def get_reasons(original):
        def wrapped(*args, **kwargs):
            reasons = original(*args, **kwargs)
            if reasons:
                local.reason = str(reasons[0])[:500]
            return reasons

        return wrapped

    _patch(convert_frame, "get_and_maybe_log_recompilation_reasons", get_reasons)

    def on_start(args):
        options = _options_on_stack()
        site = options.get("_site") if options else None
        params = {"compile_id": str(getattr(args, "compile_id", "")),
                  "trigger": getattr(getattr(args, "callback_trigger", None), "name", "")}
        local.compile_params = (params, options or {})
        # Opaque: the fake-tensor ops of tracing are not the program's dataflow.
        local.compile_open = hook.begin_kernel_op(COMPILE_OP, (), None, site, True)

    def on_end(args):
        if not getattr(local, "compile_open", False):
            return
        local.compile_open = False
        params, options = local.compile_params
        params = dict(params)
        for k, v in options.items():
            params[k] = v if not isinstance(v, dict) else repr(v)
        params.pop("_site", None)
        if getattr(local, "reason", None):
            params["recompile_reason"] = local.reason
        # Dynamo gives a reason only when it compiles a frame again (a guard
        # failed); the first compile of a frame is paid once (docs/DIFF.md,
        # "One-time compilation").
        params["compile_kind"] = "recompile" if params.get("recompile_reason") else "first"
        local.reason = None  # Dynamo asks for the reasons before or after the start callback: cleared here
        hook.end_kernel_op((), params)

    callback_handler.register_start_callback(on_start)
    callback_handler.register_end_callback(on_end)
    _state.callbacks = [on_start, on_end]


def _options_on_stack() -> dict | None:
    """The options of the torch.compile whose function or module is being
    compiled: found by the objects the frames below hold (Dynamo's `_fn`
    closes over the function; an OptimizedModule call has `self`)."""
    table = _state.options_by_id
    frame = sys._getframe(2)
    for _ in range(80):
        if frame is None:
            break
        try:
            loc = frame.f_locals
        except Exception:  # noqa: BLE001
            loc = {}
        for key in ("self", "fn", "mod", "model", "_orig_mod"):
            v = loc.get(key)
            if v is None:
                continue
            for obj in (v, getattr(v, "_orig_mod", None) if key == "self" else None):
                entry = table.get(id(obj)) if obj is not None else None
                if entry is not None and entry[0] is obj:
                    return dict(entry[1])
        frame = frame.f_back
    return dict(_state.last_options) if _state.last_options else None


# -- kernels -------------------------------------------------------------------
def _install_kernel_wrapping() -> None:
    from torch._inductor import codecache

    cache = codecache.PyCodeCache
    original = cache.__dict__["load_by_key_path"]  # a classmethod
    func = original.__func__

    def load_by_key_path(cls, *args, **kwargs):
        mod = func(cls, *args, **kwargs)
        try:
            _wrap_module(mod)
        except Exception:  # noqa: BLE001 - never break the compiled program
            pass
        return mod

    _state.patches.append((cache, "load_by_key_path", original))
    cache.load_by_key_path = classmethod(load_by_key_path)
    # Programs compiled before the recording started (a warm-up outside it).
    loaded = list(getattr(cache, "modules", []) or []) + list((getattr(cache, "modules_no_attr", {}) or {}).values())
    for mod in loaded:
        try:
            _wrap_module(mod)
        except Exception:  # noqa: BLE001
            pass
    _install_provenance()


def _install_provenance() -> None:
    """Notes what each kernel fuses as Inductor names it (define_kernel of
    the C++ and Triton schedulings): FX source nodes, original ATen ops and
    the user lines in the nodes' stack traces."""
    from torch._inductor.codegen import cpp

    try:
        from torch._inductor.codegen import triton as triton_codegen

        schedulings = [(cpp.CppScheduling, 2), (triton_codegen.TritonScheduling, 2)]
    except Exception:  # noqa: BLE001 - no triton
        schedulings = [(cpp.CppScheduling, 2)]

    def make(original, nodes_at):
        def define_kernel(self, *args, **kwargs):
            name = original(self, *args, **kwargs)
            try:
                nodes = args[nodes_at - 1] if len(args) >= nodes_at else None
                if isinstance(name, str) and nodes is not None:
                    _note_provenance(name, nodes)
            except Exception:  # noqa: BLE001
                pass
            return name

        return define_kernel

    for cls, nodes_at in schedulings:
        if "define_kernel" in cls.__dict__:
            _patch(cls, "define_kernel", lambda o, n=nodes_at: make(o, n))


def _note_provenance(name: str, nodes) -> None:
    from torch._inductor.utils import aggregate_origins

    entry = _state.provenance.setdefault(name, {"source_nodes": [], "aten": [], "source_lines": []})
    for origin in aggregate_origins(nodes):
        if getattr(origin, "op", None) != "call_function":
            continue
        meta = getattr(origin, "meta", {}) or {}
        aten = getattr(origin.target, "__name__", None) or str(origin.target)
        aten = str(aten).split(".")[0]
        if aten not in entry["aten"]:
            entry["aten"].append(aten)
        for src in meta.get("from_node", []) or []:
            src_name = getattr(src, "name", None)
            if src_name and src_name not in entry["source_nodes"]:
                entry["source_nodes"].append(src_name)
        if not meta.get("from_node") and origin.name not in entry["source_nodes"]:
            entry["source_nodes"].append(origin.name)
        stack = meta.get("stack_trace") or ""
        frames = _STACK_LINE.findall(stack)
        if frames:
            file, line, fn = frames[-1]
            text = f"{file}:{line}:{fn}"
            if text not in entry["source_lines"]:
                entry["source_lines"].append(text)


def _wrap_module(mod) -> None:
    if getattr(mod, "_magneton_kernels_wrapped", False):
        return
    mod._magneton_kernels_wrapped = True
    path = getattr(mod, "__file__", None)
    if not path:
        return
    with open(path, encoding="utf-8") as f:
        source = f.read()
    view = getattr(mod, "reinterpret_tensor", None)
    if view is not None:
        mod.reinterpret_tensor = _wrap_view(view)
    for match in _KERNEL_DEF.finditer(source):
        name, kind = match.group(1), match.group(2)
        kernel = getattr(mod, name, None)
        if kernel is None:
            continue
        body = source[match.end():match.end() + 200_000]
        if kind == "triton":
            wrapped = _wrap_triton(name, kernel, body)
        else:
            wrapped = _wrap_cpp(name, kernel, body)
        if wrapped is not None:
            setattr(mod, name, wrapped)


def _wrap_view(view):
    """`reinterpret_tensor(buf, size, stride, offset)` in a wrapper is no
    dispatcher op (a C++ guard helper), and its result has a version counter
    of its own: unrecorded, the view (a transposed weight read by an extern
    addmm) would be a value with no producer, cut off from the weight it
    reads. Recorded as an op, `inductor::reinterpret_tensor`, it links them."""
    hook = _state.hook
    name = KERNEL_OP_PREFIX + "reinterpret_tensor"

    def reinterpret_tensor(base, *args):
        if not _core.is_recording():
            return view(base, *args)
        begun = hook.begin_kernel_op(name, [base, *args])
        if not begun:
            return view(base, *args)
        out = None
        try:
            out = view(base, *args)
            return out
        finally:
            hook.end_kernel_op([out] if out is not None else [], None, False)

    reinterpret_tensor.__wrapped__ = view
    return reinterpret_tensor


def _roles(params: list[str], mutated: set[str] | None = None):
    """Per positional parameter: (read, written), from Inductor's names
    (in_ptrN read, out_ptrN written, in_out_ptrN both; Triton's mutated
    args written too); scalars (sizes, numels) are read, as op args."""
    mutated = mutated or set()
    roles = []
    for p in params:
        if p.startswith("in_out_ptr"):
            roles.append((True, True))
        elif p.startswith("out_ptr"):
            roles.append((False, True))
        else:
            roles.append((True, p in mutated))
    return roles


def _params_of(name: str, extra: dict) -> dict:
    out = dict(extra)
    prov = _state.provenance.get(name)
    if prov:
        out.update({k: list(v) for k, v in prov.items() if v})
    return out


def _wrap_cpp(name: str, kernel, body: str):
    sig = _CPP_SIGNATURE.search(body)
    if sig is None:
        return None
    params = []
    for decl in sig.group(1).split(","):
        decl = decl.strip()
        if decl:
            params.append(re.split(r"[\s*&]+", decl)[-1])
    roles = _roles(params)
    op_name = KERNEL_OP_PREFIX + name
    hook = _state.hook
    static = {"kernel": name, "backend": "cpp", "params": params}

    def call(*args):
        if not _core.is_recording():
            return kernel(*args)
        begun = hook.begin_kernel_op(op_name, [a for a, r in zip(args, roles) if r[0]], _params_of(name, static))
        if not begun:
            return kernel(*args)
        _state.kernel_ops += 1
        try:
            return kernel(*args)
        finally:
            hook.end_kernel_op([a for a, r in zip(args, roles) if r[1]])

    call.__wrapped__ = kernel
    call.__name__ = name
    return call


class _TritonKernel:
    """Stands for a Triton kernel global (`triton_poi_fused_0.run(...)` in the
    wrapper): `run` is an op, everything else is the kernel's."""

    def __init__(self, name, kernel, roles, params):
        self._kernel = kernel
        self._name = name
        self._roles = roles
        self._static = {"kernel": name, "backend": "triton", "params": params}

    def __getattr__(self, attr):
        return getattr(self._kernel, attr)

    def run(self, *args, **kwargs):
        if not _core.is_recording():
            return self._kernel.run(*args, **kwargs)
        roles = self._roles
        hook = _state.hook
        begun = hook.begin_kernel_op(
            KERNEL_OP_PREFIX + self._name, [a for a, r in zip(args, roles) if r[0]],
            _params_of(self._name, self._static))
        if not begun:
            return self._kernel.run(*args, **kwargs)
        _state.kernel_ops += 1
        try:
            return self._kernel.run(*args, **kwargs)
        finally:
            hook.end_kernel_op([a for a, r in zip(args, roles) if r[1]])


def _wrap_triton(name: str, kernel, body: str):
    if not hasattr(kernel, "run"):
        return None
    sig = _TRITON_SIGNATURE.search(body)
    if sig is None:
        return None
    params = [p.split(":")[0].strip() for p in sig.group(2).split(",") if p.strip()]
    params = [p for p in params if p and "constexpr" not in p]
    mutated_match = _TRITON_MUTATED.search(body)
    mutated = set()
    if mutated_match:
        mutated = {m.strip().strip("'\"") for m in mutated_match.group(1).split(",") if m.strip()}
    return _TritonKernel(name, kernel, _roles(params, mutated), params)
