"""Line-level tracing of a few functions, for `magneton diff`'s re-runs
(docs/DIFF.md, "Line-level diagnosis"). Thin by design: the CLI decides what
to trace and what to watch, this hook only records, per call of each target
function, the executed line numbers and, at the lines the CLI named, short
reprs of the expressions it named; the C++ side (`_core.write_line_trace`)
writes them and analyses them.

MAGNETON_LINE_TRACE is JSON: {"out": path, "targets": [{"file", "function"
(co_qualname), "line" (any line inside it), "watch": {"<line>": [expr, ...]}}]}.
A watch expression is a name, an attribute chain, a constant subscript
(``kwargs["use_cache"]``) or ``env:NAME`` (an environment variable)."""

from __future__ import annotations

import atexit
import json
import os
import sys

_MAX_CALLS = 512          # per target: generate calls a function per step
_MAX_EVENTS = 20000       # per call
_MAX_REPR = 80
_MAX_DICT_ITEMS = 32

_targets: list[dict] = []
_calls: list[tuple] = []  # (target index, [line, ...], [(event index, expr, repr), ...])
_calls_per_target: list[int] = []
_code_target: dict = {}   # code object -> target index or -1
_out = ""


def _short(value) -> str:
    # Tensors and arrays print their data: summarise instead (cheap, bounded).
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (int, float, bool, str)):
        return f"<{type(value).__name__} shape={tuple(shape)}>"
    if value is None or isinstance(value, (bool, int, float, str)):
        text = repr(value)
    else:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR - 3] + "..."


def _split_chain(expr: str) -> list:
    """'self.config.use_cache' -> ['self', '.config', '.use_cache'];
    'kwargs["use_cache"]' -> ['kwargs', '["use_cache"]']."""
    parts, cur, i = [], "", 0
    while i < len(expr):
        c = expr[i]
        if c in ".[" and cur:
            parts.append(cur)
            cur = ""
        if c == "[":
            j = expr.index("]", i)
            parts.append(expr[i:j + 1])
            cur, i = "", j + 1
            continue
        cur += c
        i += 1
    if cur:
        parts.append(cur)
    return parts


def _compile_watch(expr: str):
    if expr.startswith("env:"):
        return ("env", expr[4:])
    parts = _split_chain(expr)
    steps = []
    for p in parts[1:]:
        if p.startswith("."):
            steps.append(("attr", p[1:]))
        else:
            import ast

            steps.append(("item", ast.literal_eval(p[1:-1])))
    return ("chain", parts[0], steps)


_MISSING = object()


def _evaluate(compiled, frame):
    if compiled[0] == "env":
        return os.environ.get(compiled[1], _MISSING)
    _, root, steps = compiled
    value = frame.f_locals.get(root, _MISSING)
    if value is _MISSING:
        value = frame.f_globals.get(root, _MISSING)
    for kind, key in steps:
        if value is _MISSING:
            break
        try:
            value = getattr(value, key) if kind == "attr" else value[key]
        except Exception:
            value = _MISSING
    return value


def _target_of(code) -> int:
    index = _code_target.get(code)
    if index is None:
        index = -1
        for i, t in enumerate(_targets):
            if code.co_filename == t["file"] and getattr(code, "co_qualname", code.co_name) == t["function"]:
                lines = [ln for _, _, ln in code.co_lines() if ln is not None]
                if lines and min(min(lines), code.co_firstlineno) <= t["line"] <= max(lines):
                    index = i
                    break
        _code_target[code] = index
    return index


def _new_call(index: int):
    if _calls_per_target[index] >= _MAX_CALLS:
        return None
    _calls_per_target[index] += 1
    call = (index, [], [])
    _calls.append(call)
    return call


def _on_line(call, frame, line: int) -> None:
    lines, values = call[1], call[2]
    if len(lines) >= _MAX_EVENTS:
        return
    watch = _targets[call[0]]["compiled"].get(line)
    if watch:
        event = len(lines)
        for expr, compiled in watch:
            value = _evaluate(compiled, frame)
            values.append((event, expr, "<unbound>" if value is _MISSING else _short(value)))
            if type(value) is dict:
                # Options travel in dicts (generate's model_kwargs): their
                # entries are what differs, not the dict's short repr.
                for n, (key, item) in enumerate(value.items()):
                    if n == _MAX_DICT_ITEMS:
                        break
                    if type(key) is str:
                        values.append((event, f'{expr}["{key}"]', _short(item)))
    lines.append(line)


def _install_settrace() -> None:
    def global_trace(frame, event, arg):
        index = _target_of(frame.f_code)
        if index < 0:
            return None  # no line events for any other code
        call = _new_call(index)
        if call is None:
            return None

        def local_trace(frame, event, arg):
            if event == "line":
                _on_line(call, frame, frame.f_lineno)
            return local_trace

        return local_trace

    sys.settrace(global_trace)
    import threading

    threading.settrace(global_trace)


def _install_monitoring() -> None:
    mon = sys.monitoring
    tool = mon.PROFILER_ID if mon.get_tool(mon.PROFILER_ID) is None else 5
    mon.use_tool_id(tool, "magneton-line-trace")
    stacks: dict = {}  # code -> the open calls of that code (recursion)

    def on_start(code, offset):
        index = _target_of(code)
        if index < 0:
            return mon.DISABLE
        mon.set_local_events(tool, code, mon.events.LINE | mon.events.PY_RETURN)
        call = _new_call(index)
        stacks.setdefault(code, []).append(call)
        return None

    def on_line(code, line):
        stack = stacks.get(code)
        if stack and stack[-1] is not None:
            # The callback runs on top of the monitored frame.
            _on_line(stack[-1], sys._getframe(1), line)

    def on_return(code, offset, *rest):
        stack = stacks.get(code)
        if stack:
            stack.pop()

    mon.register_callback(tool, mon.events.PY_START, on_start)
    mon.register_callback(tool, mon.events.LINE, on_line)
    mon.register_callback(tool, mon.events.PY_RETURN, on_return)
    mon.register_callback(tool, mon.events.PY_UNWIND, on_return)
    # PY_UNWIND (a call left by an exception) is a global event only.
    mon.set_events(tool, mon.events.PY_START | mon.events.PY_UNWIND)


def _watched_name(expr: str) -> str:
    """'env:HF_TOKEN' -> 'HF_TOKEN'; 'kwargs["token"]' -> 'token'; 'self.config.api_key' -> 'api_key'."""
    if expr.startswith("env:"):
        return expr[4:]
    return _split_chain(expr)[-1].strip('.[]"\'')


def _write() -> None:
    from magneton import _core

    sys.settrace(None)
    targets = [(t["file"], t["function"], t["line"]) for t in _targets]
    # The values end up in diff reports, which are shared like traces: the
    # trace writer's rule (trace/redact.h) keeps secret-looking ones out.
    calls = [(index, lines, [(event, expr, _core.redact(_watched_name(expr), text))
                             for event, expr, text in values])
             for index, lines, values in _calls]
    _core.write_line_trace(_out, targets, calls)


def activate() -> bool:
    """Installs the tracer when MAGNETON_LINE_TRACE names targets."""
    global _out
    text = os.environ.pop("MAGNETON_LINE_TRACE", "")
    if not text:
        return False
    request = json.loads(text)
    _out = request["out"]
    for t in request["targets"]:
        compiled = {}
        for line, exprs in t.get("watch", {}).items():
            items = []
            for e in exprs:
                try:
                    items.append((e, _compile_watch(e)))
                except (ValueError, SyntaxError):
                    continue  # an expression this hook does not evaluate
            compiled[int(line)] = items
        _targets.append({"file": t["file"], "function": t["function"], "line": int(t["line"]),
                         "compiled": compiled})
        _calls_per_target.append(0)
    if sys.version_info >= (3, 12):
        _install_monitoring()
    else:
        _install_settrace()
    atexit.register(_write)
    return True
