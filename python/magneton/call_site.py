"""Where the program itself made a call: the innermost frame outside the
given library folders, Magneton, the standard library and installed packages
(``file:line:function``, the StateSetter ``where``)."""

from __future__ import annotations

import os
import sys
import sysconfig

_MAGNETON_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def library_dirs(*extra: str) -> tuple[str, ...]:
    """Magneton first (the fallback skips only it), then extra, the standard library and installed packages."""
    paths = sysconfig.get_paths()
    return tuple(dict.fromkeys(p for p in (_MAGNETON_DIR, *extra, paths.get("stdlib"), paths.get("purelib"),
                                           paths.get("platlib")) if p))


def user_site(skip_dirs: tuple[str, ...], depth: int = 2) -> str:
    f = sys._getframe(depth)
    first = None
    while f is not None:
        name = f.f_code.co_filename
        if first is None and not name.startswith(_MAGNETON_DIR):
            first = f  # innermost frame outside Magneton: the answer when all are library code
        if not name.startswith(skip_dirs) and not name.startswith("<"):
            return f"{name}:{f.f_lineno}:{f.f_code.co_name}"
        f = f.f_back
    f = first
    return f"{f.f_code.co_filename}:{f.f_lineno}:{f.f_code.co_name}" if f is not None else "?"
