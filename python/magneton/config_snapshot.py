"""Gathers the config snapshot: global flags, env vars, model configs, call
arguments. Values are stored as text in the trace's ``config`` table, where
diagnosis diffs them between two runs. Values of names that look secret
(``HF_TOKEN``, ``api_key``) are stored as ``<redacted>`` by the C++ trace
writer, whatever records them (docs/TRACE_FORMAT.md)."""

from __future__ import annotations

import sys

from magneton import _core
from magneton import env_snapshot


def _scrubbed(value, depth: int = 0):
    """The value with entries of nested dicts whose keys look secret replaced
    (``{"token": ...}`` passed as a kwarg): the trace writer redacts by the
    entry's own name, and sees only the outer one. The rule is the C++ one."""
    if depth > 4:
        return value
    if isinstance(value, dict):
        return {k: _core.REDACTED if isinstance(k, str) and _core.is_secret_name(k) else _scrubbed(v, depth + 1)
                for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_scrubbed(v, depth + 1) for v in value)
    return value


def _set(key: str, value, source: str) -> None:
    value = _scrubbed(value)
    _core.set_config(key, repr(value) if not isinstance(value, str) else value, source)


def record_process_config() -> None:
    env_snapshot.start()  # the environment, and when it changed (env_snapshot.py)
    if "torch" in sys.modules:
        record_torch_flags()


def record_torch_flags() -> None:
    import torch

    flags = {
        "torch.get_num_threads": torch.get_num_threads,
        "torch.get_num_interop_threads": torch.get_num_interop_threads,
        "torch.get_float32_matmul_precision": torch.get_float32_matmul_precision,
        "torch.is_grad_enabled": torch.is_grad_enabled,
        "torch.is_inference_mode_enabled": torch.is_inference_mode_enabled,
        "torch.get_default_dtype": torch.get_default_dtype,
        "torch.are_deterministic_algorithms_enabled": torch.are_deterministic_algorithms_enabled,
        "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
            lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "torch.backends.cudnn.enabled": lambda: torch.backends.cudnn.enabled,
        "torch.backends.cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
        "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "torch.backends.mkldnn.enabled": lambda: torch.backends.mkldnn.enabled,
        "torch.backends.mkl.is_available": torch.backends.mkl.is_available,
        "torch.backends.openmp.is_available": torch.backends.openmp.is_available,
        "torch.backends.cuda.flash_sdp_enabled": torch.backends.cuda.flash_sdp_enabled,
        "torch.backends.cuda.mem_efficient_sdp_enabled": torch.backends.cuda.mem_efficient_sdp_enabled,
        "torch.backends.cuda.math_sdp_enabled": torch.backends.cuda.math_sdp_enabled,
        "torch.cuda.is_available": torch.cuda.is_available,
    }
    for key, getter in flags.items():
        try:
            _set(key, getter(), "global_flag")
        except Exception as exc:  # a flag missing in this torch version
            _set(key, f"<unavailable: {type(exc).__name__}>", "global_flag")


def record_jax_flags() -> None:
    """Every jax.config flag (x64, default_matmul_precision, platforms, ...)
    and the backend, as the program set them before recording changed any."""
    import jax

    for key, value in sorted(jax.config.values.items()):
        _set("jax.config." + key, value, "global_flag")
    try:
        _set("jax.default_backend", jax.default_backend(), "global_flag")
        _set("jax.devices", [str(d) for d in jax.devices()], "global_flag")
    except Exception as exc:  # no backend could start
        _set("jax.default_backend", f"<unavailable: {type(exc).__name__}>", "global_flag")


def record_model_config(scope: str, module) -> None:
    """Records a model's config object (HF ``config``) once per root module."""
    config = getattr(module, "config", None)
    to_dict = getattr(config, "to_dict", None)
    if to_dict is None:
        return
    try:
        items = to_dict()
    except Exception:
        return
    for key, value in sorted(items.items()):
        if isinstance(value, (dict, list)) and len(repr(value)) > 200:
            continue
        _set(f"model_config.{scope}.{key}", value, "model_config")
    attn = getattr(config, "_attn_implementation", None)
    if attn is not None:
        _set(f"model_config.{scope}._attn_implementation", attn, "model_config")


def record_call_args(function: str, kwargs: dict) -> None:
    for key, value in sorted(kwargs.items()):
        if hasattr(value, "shape"):
            value = f"<tensor shape={tuple(value.shape)}>"
        text = repr(_scrubbed(value))
        if len(text) > 200:
            text = text[:197] + "..."
        _core.set_config(f"call.{function}.{key}", text, "call_arg")
