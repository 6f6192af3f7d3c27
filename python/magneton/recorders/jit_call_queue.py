"""Jitted calls whose op ends at dispatch (JAX jit mode with XLA's profile).

JAX dispatches a jitted call asynchronously: unrecorded, call N+1 is
dispatched while call N still runs. Waiting for each call's outputs to end its
op (reading an output's buffer address waits for it) made every call wait and
put JAX's dispatch between the runs (1.99x on bench/jax_jit). Instead the op is
detached at dispatch (``_core.detach_array_op``: later ops do not nest in it)
and its outputs are read later (``_core.finish_array_op``), when the call after
the next one begins: the device then has the next call queued while the
reader waits. So a call's run has ended before the third call after it on its
thread begins (record/xla_profile.cc pairs runs with calls by that). The op is held in the recorder until XLA's profile is read at the
recording's end, which gives it its run's span (src/record/xla_profile.cc).

A call's outputs are read before any op that may take them as inputs begins:
a jitted call with one of them among its arguments (a training loop's state),
an eager primitive (the eval-trace hook calls ``flush``), the recording's end.
docs/JAX.md "Jit mode"."""

from __future__ import annotations

from collections import deque

from magneton import _core


class CallQueue:
    def __init__(self):
        self._pending: deque = deque()  # (op id, outputs, op args, name, module)
        self._ids: set[int] = set()  # id() of the pending outputs
        self._detach = _core.detach_array_op
        self._finish = _core.finish_array_op

    def before(self, args) -> None:
        """A call's op is about to begin with `args`: the call before the last
        one is read (the last one is queued on the device meanwhile), and any
        call whose outputs are among `args` (their values must be known).
        Reading here, not at the end of a call, keeps the reads (and --values'
        fingerprints) out of the call's own dispatch, whose end the profile's
        clock is paired by."""
        while len(self._pending) > 1:
            self._finish_oldest()
        ids = self._ids
        if ids and any(id(a) in ids for a in args):
            self.flush()

    def dispatched(self, outputs, op_args: dict, name: str, start_ns: int = 0, returned_ns: int = 0) -> None:
        """This thread's innermost op (a jitted call) was dispatched with `outputs`;
        start_ns / returned_ns (time.monotonic_ns()): when the call began and
        returned, for an op begun after it (jax_jit_wrap.py)."""
        op_id = self._detach(start_ns, returned_ns)
        if op_id < 0:
            return
        outputs = tuple(outputs)
        self._pending.append((op_id, outputs, op_args, name, op_args.get("hlo_module", "")))
        self._ids.update(id(o) for o in outputs)

    def flush(self) -> None:
        while self._pending:
            self._finish_oldest()

    def _finish_oldest(self) -> None:
        try:
            op_id, outputs, op_args, name, module = self._pending.popleft()
        except IndexError:  # another thread took it between its length check and here
            return
        for o in outputs:
            self._ids.discard(id(o))
        self._finish(op_id, outputs, op_args, name, module)
