"""CUDA graphs for the PyTorch recorder: captures and replays as ops of the recorder's own.

A CUDA graph is captured once — the program's ops run, but their kernel launches only add
nodes to the graph — and replayed many times, each replay one ``cudaGraphLaunch`` that runs
every node with no op around it. Without help, a replay's kernels belong to no recorded op and
the captured ops look like work that ran.

So, in a CUDA build of torch with a GPU (where torch.profiler collects device activity,
``gpu_activity.py``), ``torch.cuda.CUDAGraph`` is wrapped — the class, so ``torch.cuda.graph``,
``torch.compile(mode="reduce-overhead")``'s cudagraph trees and direct ``capture_begin`` /
``capture_end`` / ``replay`` calls (vLLM, SGLang) are all seen:

* ``capture_begin`` .. ``capture_end`` becomes the recorder op ``magneton::cuda_graph_capture``;
  the ops captured are recorded inside it, so their time and energy are the recorder's, not the
  job's (they queued nothing), and they are not top-level work;
* each ``replay()`` becomes the op ``cuda_graph::replay`` — the program's work, not the
  recorder's — which holds the ``cudaGraphLaunch`` and so is charged the kernels it ran.

Both name their graph in their args (``{"graph": N}``, N numbered per process as graphs are
first captured). The C++ ingest (``src/gpu/graph_link.cc``) links each replayed kernel to the
captured op whose launch created its node (docs/TRACE_FORMAT.md, "CUDA graphs"). Anywhere
else — a CPU-only torch, no visible GPU, ``MAGNETON_GPU_ACTIVITY=0`` — nothing is wrapped.
"""

from __future__ import annotations

import itertools
import weakref

from magneton import _core

CAPTURE_OP = "magneton::cuda_graph_capture"
REPLAY_OP = "cuda_graph::replay"

_patches: list[tuple[object, str, object]] = []
_keys: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()
_next_key = itertools.count(1)


def why_inactive(torch) -> str | None:
    """Why captures and replays are not recorded here, or None."""
    from magneton.recorders import gpu_activity

    reason = gpu_activity.off_reason(torch)
    if reason is not None:
        return reason
    if getattr(getattr(torch, "cuda", None), "CUDAGraph", None) is None:
        return f"torch {torch.__version__} has no torch.cuda.CUDAGraph"
    return None


def _key(graph) -> int:
    try:
        key = _keys.get(graph)
        if key is None:
            key = _keys[graph] = next(_next_key)
        return key
    except TypeError:  # not weak-referenceable: numbered per call, so it pairs with nothing
        return -1


def install(torch) -> bool:
    """Wraps torch.cuda.CUDAGraph where device activity is collected; True when it did."""
    if _patches or why_inactive(torch) is not None:
        return False
    graph_cls = torch.cuda.CUDAGraph
    begin, end, replay = graph_cls.capture_begin, graph_cls.capture_end, graph_cls.replay

    # Only while the window is open (docs/ARCHITECTURE.md "Windowed recording"): like every hook, an op is
    # begun only then, and ended only if it was begun (a capture may straddle the window's edge).
    open_captures: set[int] = set()

    def capture_begin(self, *args, **kwargs):
        recording = _core.recording_open()
        if recording:
            _core.begin_array_op(CAPTURE_OP, ())
            open_captures.add(id(self))
        try:
            return begin(self, *args, **kwargs)
        except BaseException:
            if recording:
                open_captures.discard(id(self))
                _core.end_array_op((), {"graph": _key(self), "failed": True})
            raise

    def capture_end(self, *args, **kwargs):
        try:
            return end(self, *args, **kwargs)
        finally:
            if id(self) in open_captures:
                open_captures.discard(id(self))
                _core.end_array_op((), {"graph": _key(self)})

    def graph_replay(self, *args, **kwargs):
        if not _core.recording_open():
            return replay(self, *args, **kwargs)
        _core.begin_array_op(REPLAY_OP, ())
        try:
            return replay(self, *args, **kwargs)
        finally:
            _core.end_array_op((), {"graph": _key(self)})

    for name, wrapper, original in (("capture_begin", capture_begin, begin), ("capture_end", capture_end, end),
                                    ("replay", graph_replay, replay)):
        wrapper.__wrapped__ = original
        _patches.append((graph_cls, name, original))
        setattr(graph_cls, name, wrapper)
    return True


def uninstall() -> None:
    for owner, name, original in reversed(_patches):
        setattr(owner, name, original)
    _patches.clear()
