"""Started by `magneton record -- python script.py`: begins recording before
the script runs and closes the trace at exit, without changing the script."""

import os
import sys


def _chain_to_next_sitecustomize():
    # Ours shadows any sitecustomize that the environment already had.
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    mod = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        import importlib

        try:
            importlib.import_module("sitecustomize")
        except ImportError:
            pass
    finally:
        sys.path[:] = saved
        if mod is not None:
            sys.modules["sitecustomize"] = mod


def _start():
    if os.environ.get("MAGNETON_LINE_TRACE"):  # a `magneton diff` re-run (docs/DIFF.md)
        from magneton import line_trace

        line_trace.activate()
    path = os.environ.pop("MAGNETON_RECORD_PATH", None)
    if not path:
        return
    # Child processes of the script are not recorded into the same file.
    label = os.environ.pop("MAGNETON_RECORD_LABEL", None)
    command_line = os.environ.pop("MAGNETON_COMMAND_LINE", None)
    values = os.environ.pop("MAGNETON_RECORD_VALUES", "0") == "1"
    # The getenv interposer (record_child.cc) stays loaded here; the script's
    # own children run without it.
    preloaded = os.environ.pop("MAGNETON_GETENV_PRELOADED", None)
    if preloaded:
        rest = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p and p != preloaded]
        if rest:
            os.environ["LD_PRELOAD"] = ":".join(rest)
        else:
            os.environ.pop("LD_PRELOAD", None)
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != here)

    import atexit

    import magneton
    from magneton import overrides

    overrides.activate()  # set only by `magneton diff --confirm` re-runs
    magneton.start(path, label=label, command_line=command_line, values=values)
    atexit.register(magneton.stop)


_chain_to_next_sitecustomize()
_start()
