"""Magneton: a differential energy debugger for ML systems.

The heavy lifting is in the C++ core (``magneton._core``); this package holds
only the hooks into frameworks and thin glue. ``open`` and ``diff`` (the
notebook API, magneton.analysis) load the analysis module only when called:
a traced process imports this package and must not map the analysis.
"""

from magneton.analysis import diff, open  # noqa: A004 (magneton.open reads a trace)
from magneton.recording import record, start, step, stop

__all__ = ["diff", "open", "record", "start", "step", "stop"]
__version__ = "0.1.0"
