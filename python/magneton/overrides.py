"""Counterfactual overrides for `magneton diff --confirm`: the CLI re-runs a
program with MAGNETON_OVERRIDES (a JSON list of {key, value, source}) and these
hooks set each variable the way the efficient run had it. Keys are config
snapshot keys (docs/TRACE_FORMAT.md): call.<function>.<arg>, model_config.<Root>.<field>,
torch.backends.* and known torch getters (global_flag), jax.config.*; env.* is
set by the CLI itself.

MAGNETON_OVERRIDES is data derived from traces. The CLI validated it
(src/diagnose/override_rules.cc); this module checks it again and refuses
anything else (docs/DIFF.md, "--confirm"): no module is imported and no
attribute path is walked by a name taken from it — only fixed setters, existing
torch.backends attributes of the same type, existing config fields, and plain
literal values."""

from __future__ import annotations

import ast
import json
import os
import re
import sys

_WORD = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
_LITERAL = re.compile(r"True|False|None|-?[0-9]{1,18}|-?[0-9]{1,18}\.[0-9]{0,18}(e-?[0-9]{1,3})?|"
                      rf"'{_WORD}'|\"{_WORD}\"|{_WORD}")
_STR_VALUE = re.compile(_WORD)
_CALL_KEY = re.compile(r"call\.([A-Za-z_][A-Za-z0-9_.]{0,127})\.([A-Za-z_][A-Za-z0-9_]{0,63})")
_CONFIG_KEY = re.compile(r"model_config\.([A-Za-z_][A-Za-z0-9_]{0,127})\.([A-Za-z_][A-Za-z0-9_]{0,63})")
_BACKENDS_KEY = re.compile(r"torch\.backends((?:\.[a-z_][a-z0-9_]{0,63}){2,4})")
_JAX_KEY = re.compile(r"jax\.config\.(jax_[a-z0-9_]{1,63})")

# torch getters the config snapshot records -> (setter in torch, value check).
_DTYPES = ("float32", "float64", "float16", "bfloat16")
_TORCH_SETTERS = {
    "torch.get_num_threads": ("set_num_threads", lambda v: type(v) is int and 0 < v <= 4096),
    "torch.get_num_interop_threads": ("set_num_interop_threads", lambda v: type(v) is int and 0 < v <= 4096),
    "torch.get_float32_matmul_precision": ("set_float32_matmul_precision", lambda v: v in ("highest", "high",
                                                                                           "medium")),
    "torch.is_grad_enabled": ("set_grad_enabled", lambda v: type(v) is bool),
    "torch.get_default_dtype": ("set_default_dtype", lambda v: v in _DTYPES or v in tuple("torch." + d for d in _DTYPES)),
    "torch.are_deterministic_algorithms_enabled": ("use_deterministic_algorithms", lambda v: type(v) is bool),
    "torch.backends.cuda.flash_sdp_enabled": ("backends.cuda.enable_flash_sdp", lambda v: type(v) is bool),
    "torch.backends.cuda.mem_efficient_sdp_enabled": ("backends.cuda.enable_mem_efficient_sdp",
                                                      lambda v: type(v) is bool),
    "torch.backends.cuda.math_sdp_enabled": ("backends.cuda.enable_math_sdp", lambda v: type(v) is bool),
}


class OverrideRefused(ValueError):
    """An override this module does not apply: the re-run must not go on as if it had."""


def _parse(value) -> object:
    """A plain literal (truth value, None, number, short word) or OverrideRefused."""
    if not isinstance(value, str) or not _LITERAL.fullmatch(value):
        raise OverrideRefused(f"the value {value!r} is not a plain literal")
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = value  # plain strings are stored without quotes
    if isinstance(parsed, str) and not _STR_VALUE.fullmatch(parsed):
        raise OverrideRefused(f"the value {value!r} is not a plain literal")
    if parsed is not None and type(parsed) not in (bool, int, float, str):
        raise OverrideRefused(f"the value {value!r} is not a plain literal")
    return parsed


def _same_type(current, value) -> bool:
    if type(current) is bool or type(value) is bool:
        return type(current) is bool and type(value) is bool
    if type(current) is float:
        return type(value) in (int, float)
    return type(current) in (int, str) and type(value) is type(current)


def _backends_owner(path: list[str]):
    """The object holding the last attribute of torch.backends.<path>, walked only
    through torch.backends' own modules and objects; OverrideRefused otherwise."""
    import types

    import torch.backends

    obj = torch.backends
    for name in path[:-1]:
        if name.startswith("_"):
            raise OverrideRefused(f"torch.backends.{'.'.join(path)} is not a torch.backends flag")
        nxt = getattr(obj, name, None)
        own_module = isinstance(nxt, types.ModuleType) and nxt.__name__.startswith("torch.backends.")
        own_object = (nxt is not None and not isinstance(nxt, (type, types.ModuleType))
                      and type(nxt).__module__.startswith("torch.backends."))
        if not (own_module or own_object):
            raise OverrideRefused(f"torch.backends.{'.'.join(path)} is not a torch.backends flag")
        obj = nxt
    return obj


def _check_global(key: str, value) -> None:
    if key in _TORCH_SETTERS:
        if not _TORCH_SETTERS[key][1](value):
            raise OverrideRefused(f"{value!r} is not a valid value for {key}")
        return
    m = _BACKENDS_KEY.fullmatch(key)
    if m:
        return  # the attribute and its type are checked against torch when applied
    if _JAX_KEY.fullmatch(key):
        return
    raise OverrideRefused(f"{key} is not a flag with a known setter")


def load() -> list[dict]:
    text = os.environ.pop("MAGNETON_OVERRIDES", "")
    entries = json.loads(text) if text else []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise OverrideRefused("MAGNETON_OVERRIDES is not a list of {key, value, source}")
    return entries


def _refuse(message: str) -> None:
    sys.stderr.write(f"magneton: override refused: {message}\n")


class Overrides:
    def __init__(self, entries: list[dict]):
        self.call_args: dict[str, dict] = {}
        self.model_config: dict[str, dict] = {}
        self.global_flags: dict[str, object] = {}
        for e in entries:
            key, raw, source = e.get("key"), e.get("value"), e.get("source", "")
            if not isinstance(key, str):
                raise OverrideRefused("an override without a key")
            if key.startswith("env.") and source == "env":
                continue  # set in the environment by the CLI, validated there
            value = _parse(raw)
            if m := _CALL_KEY.fullmatch(key):
                self.call_args.setdefault(m.group(1), {})[m.group(2)] = value
            elif m := _CONFIG_KEY.fullmatch(key):
                self.model_config.setdefault(m.group(1), {})[m.group(2)] = value
            elif key.startswith(("torch.", "jax.")):
                _check_global(key, value)
                self.global_flags[key] = value
            else:
                raise OverrideRefused(f"{key} ({source}) is not something --confirm sets")

    def apply_call_args(self, function: str, kwargs: dict) -> dict:
        if function in self.call_args:
            kwargs = {**kwargs, **self.call_args[function]}
        return kwargs

    def apply_model_config(self, root_name: str, module) -> None:
        config = getattr(module, "config", None)
        for field, value in self.model_config.get(root_name, {}).items():
            if config is None or field.startswith("__") or not hasattr(config, field):
                _refuse(f"model_config.{root_name}.{field}: the model's config has no such field")
                continue
            current = getattr(config, field)
            if callable(current):
                _refuse(f"model_config.{root_name}.{field} is not a config value")
                continue
            setattr(config, field, value)

    def apply_global_flags(self) -> None:
        for key, value in self.global_flags.items():
            try:
                self._apply_global(key, value)
            except OverrideRefused as exc:
                _refuse(str(exc))

    @staticmethod
    def _apply_global(key: str, value) -> None:
        import torch

        if key in _TORCH_SETTERS:
            setter_path = _TORCH_SETTERS[key][0].split(".")
            owner = torch.backends.cuda if setter_path[:2] == ["backends", "cuda"] else torch
            setter = getattr(owner, setter_path[-1])
            if key == "torch.get_default_dtype":
                value = getattr(torch, value.rsplit(".", 1)[-1])
            setter(value)
            return
        if m := _BACKENDS_KEY.fullmatch(key):
            path = m.group(1)[1:].split(".")
            owner = _backends_owner(path)
            attr = path[-1]
            if attr.startswith("_") or not hasattr(owner, attr):
                raise OverrideRefused(f"{key} is not an existing torch.backends flag")
            current = getattr(owner, attr)
            if not _same_type(current, value):
                raise OverrideRefused(f"{key} is a {type(current).__name__}, not a {type(value).__name__}")
            setattr(owner, attr, value)
            return
        if m := _JAX_KEY.fullmatch(key):
            if "jax" not in sys.modules:
                return
            from jax import config

            name = m.group(1)
            values = getattr(config, "values", {})
            if name not in values or not _same_type(values[name], value):
                raise OverrideRefused(f"{key} is not an existing jax.config option of that type")
            config.update(name, value)
            return
        raise OverrideRefused(f"{key} is not a flag with a known setter")


_active = Overrides([])


def activate() -> Overrides:
    """Reads MAGNETON_OVERRIDES; a re-run whose overrides are refused stops here
    (exit code 3) rather than run as if they had been applied."""
    global _active
    try:
        _active = Overrides(load())
    except (OverrideRefused, ValueError) as exc:
        _refuse(str(exc))
        raise SystemExit(3)
    return _active


def active() -> Overrides:
    return _active
