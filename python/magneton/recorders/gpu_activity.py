"""Device activity for the PyTorch recorder: GPU kernels, copies and fills.

In a CUDA build of torch with a GPU visible, torch.profiler (Kineto, which
drives CUPTI) runs alongside the recorder with CPU and CUDA activity; at stop
its trace is exported and ingested in C++ (``_core.ingest_kineto_trace``):
each activity put on the op clock and linked to the recorded op that launched
it (docs/TRACE_FORMAT.md, "Device activities"). The CPU activity is what
anchors the profiler's clock to the recorder's: its host ops are the same
RecordFunctions the recorder sees.

Anywhere else this is a no-op that says why in the trace's meta
(``gpu.off``), which ``magneton record`` and ``magneton show`` print.
``MAGNETON_GPU_ACTIVITY=0`` turns it off.
"""

from __future__ import annotations

import os
import sys
import tempfile

from magneton import _core


def off_reason(torch) -> str | None:
    """Why device activity cannot be collected here, or None."""
    if os.environ.get("MAGNETON_GPU_ACTIVITY") == "0":
        return "MAGNETON_GPU_ACTIVITY=0"
    if getattr(torch.version, "cuda", None) is None:
        return (f"torch {torch.__version__} is a CPU-only build; GPU kernels are recorded with a CUDA build "
                "of torch on a machine with a GPU")
    try:
        if not torch.autograd.kineto_available():
            return f"torch {torch.__version__} was built without Kineto, the profiler that reads GPU activity"
    except AttributeError:
        return f"torch {torch.__version__} has no Kineto profiler"
    if not torch.cuda.is_available():
        return "no CUDA device is visible to torch"
    return None


class GpuActivity:
    def __init__(self):
        self._prof = None
        self._start = None

    def start(self, torch) -> None:
        reason = off_reason(torch)
        if reason is not None:
            _core.set_meta("gpu.off", reason)
            return
        from torch.profiler import ProfilerActivity, profile

        # Shapes and stacks are the recorder's job; the profiler keeps only
        # what links kernels to ops.
        try:
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False,
                           with_stack=False, profile_memory=False)
            self._start = _core.measure_realtime_offset()
            prof.start()
        except Exception as exc:  # CUPTI refused (permissions, another profiler): record without it
            _core.set_meta("gpu.error", f"torch.profiler did not start: {exc}")
            print(f"magneton: GPU kernels not recorded: torch.profiler did not start: {exc}", file=sys.stderr)
            return
        self._prof = prof

    @property
    def active(self) -> bool:
        """Whether the profiler is running (device activity will be ingested at stop)."""
        return self._prof is not None

    def stop(self) -> None:
        prof, self._prof = self._prof, None
        if prof is None:
            return
        try:
            prof.stop()
            stop = _core.measure_realtime_offset()
            with tempfile.TemporaryDirectory(prefix="magneton-kineto-") as folder:
                path = os.path.join(folder, "trace.json")
                prof.export_chrome_trace(path)
                _core.ingest_kineto_trace(path, self._start, stop)
        except Exception as exc:  # the recording itself stays good
            _core.set_meta("gpu.error", str(exc))
            print(f"magneton: GPU kernels not recorded: {exc}", file=sys.stderr)
