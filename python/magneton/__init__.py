"""Magneton: a differential energy debugger for ML systems.

The heavy lifting is in the C++ core (``magneton._core``); this package holds
only the hooks into frameworks and thin glue.
"""

from magneton.recording import record, start, stop

__all__ = ["record", "start", "stop"]
__version__ = "0.1.0"
