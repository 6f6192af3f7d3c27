"""One Status -> exception mapping for every binding (src/bindings/status_exception.h): the same failure raises the
same Python exception type from magneton._core, magneton._analysis and magneton._torch_hook."""

import sqlite3

import pytest

from conftest import require

torch = require("torch")

import magneton  # noqa: E402
from magneton import _analysis, _core  # noqa: E402
from magneton.recorders.torch_recorder import _load_hook  # noqa: E402


def _version_1_trace(tmp_path):
    path = str(tmp_path / "v1.mtrace")
    with magneton.record(path):
        torch.relu(torch.randn(4))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    return path


def test_each_status_code_raises_its_exception_type_from_every_module(tmp_path):
    hook = _load_hook()
    missing = str(tmp_path / "missing.mtrace")
    not_a_trace = tmp_path / "notes.mtrace"
    not_a_trace.write_text("just some text, long enough to not be an sqlite header")
    old = _version_1_trace(tmp_path)

    # kNotFound -> FileNotFoundError, from both modules.
    with pytest.raises(FileNotFoundError, match="missing.mtrace"):
        _analysis.summarize(missing)
    with pytest.raises(FileNotFoundError, match="missing.mtrace"):
        hook.replay_trace(missing)
    # kCorrupt and kVersionMismatch -> ValueError (bad input), from both modules.
    with pytest.raises(ValueError, match="not a Magneton trace"):
        _analysis.validate(str(not_a_trace))
    with pytest.raises(ValueError, match="re-record"):
        hook.replay_trace(old)
    with pytest.raises(ValueError, match="schema version 1"):
        _analysis.summarize(old)
    # kInvalidArgument -> ValueError.
    with pytest.raises(ValueError):
        _core.OrtSession("this is not a graph", 0)
    # kFailedPrecondition -> RuntimeError, raised while the binding has released the GIL.
    assert not _core.is_recording()
    with pytest.raises(RuntimeError, match="no recording is active"):
        _core.stop_recording()
    # The exact types, not only subclasses: a RuntimeError is not a ValueError here.
    for call, kind in [(lambda: _analysis.summarize(missing), FileNotFoundError),
                       (lambda: hook.replay_trace(old), ValueError),
                       (lambda: _core.stop_recording(), RuntimeError)]:
        with pytest.raises(Exception) as info:
            call()
        assert type(info.value) is kind
