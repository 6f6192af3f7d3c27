"""Counterfactual overrides for `magneton diff --confirm`: the CLI re-runs a
program with MAGNETON_OVERRIDES (a JSON list of {key, value, source}) and these
hooks set each variable the way the efficient run had it. Keys are config
snapshot keys (docs/TRACE_FORMAT.md): call.<function>.<arg>, model_config.<Root>.<field>,
torch.<flag path> (global_flag); env.* is set by the CLI itself."""

from __future__ import annotations

import ast
import json
import os


def _parse(value: str):
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value  # plain strings are stored without quotes


def load() -> list[dict]:
    text = os.environ.pop("MAGNETON_OVERRIDES", "")
    return json.loads(text) if text else []


class Overrides:
    def __init__(self, entries: list[dict]):
        self.call_args: dict[str, dict] = {}
        self.model_config: dict[str, dict] = {}
        self.global_flags: dict[str, object] = {}
        for e in entries:
            key, value, source = e["key"], _parse(e["value"]), e.get("source", "")
            if key.startswith("call."):
                function, arg = key[len("call."):].rsplit(".", 1)
                self.call_args.setdefault(function, {})[arg] = value
            elif key.startswith("model_config."):
                root, field = key[len("model_config."):].split(".", 1)
                self.model_config.setdefault(root, {})[field] = value
            elif source == "global_flag" or key.startswith("torch."):
                self.global_flags[key] = value

    def apply_call_args(self, function: str, kwargs: dict) -> dict:
        if function in self.call_args:
            kwargs = {**kwargs, **self.call_args[function]}
        return kwargs

    def apply_model_config(self, root_name: str, module) -> None:
        config = getattr(module, "config", None)
        for field, value in self.model_config.get(root_name, {}).items():
            if config is not None:
                setattr(config, field, value)

    def apply_global_flags(self) -> None:
        import importlib

        for key, value in self.global_flags.items():
            parts = key.split(".")
            if parts[-1].startswith("get_"):  # torch.get_num_threads -> torch.set_num_threads
                owner = importlib.import_module(".".join(parts[:-1]))
                getattr(owner, "set_" + parts[-1][4:])(value)
                continue
            obj = importlib.import_module(parts[0])
            for p in parts[1:-1]:
                obj = getattr(obj, p)
            setattr(obj, parts[-1], value)


_active = Overrides([])


def activate() -> Overrides:
    global _active
    _active = Overrides(load())
    return _active


def active() -> Overrides:
    return _active
