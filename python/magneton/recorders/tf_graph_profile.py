"""TensorFlow's profiler for the recording, so that the graph nodes of
``tf.function`` calls are recorded one by one (a call reaches Python as one
``__inference_<f>_<n>`` op; its graph runs in TF's executor). Started at the
program's first ``tf.function`` call (start costs ~0.1 ms; eager-only
programs never start it), stopped at the recording's end: TF writes the
XSpace (``plugins/profile/<date>/<host>.xplane.pb``) under a temporary
folder of our own, converts it to Chrome trace-event JSON
(``xspace_to_tools_data([path], "trace_viewer@")``) and
``_core.ingest_tf_profile`` (src/record/tf_profile.cc) nests each executed
node in its call's op as ``tf::<OpType>``. ``MAGNETON_TF_PROFILE=0`` turns
it off (the calls stay one op each). When it cannot start (the program runs
a TF profiler of its own), the recording goes on as without it and says
why in the trace's meta (``tf.profile.off``). docs/TENSORFLOW.md,
"tf.function graphs"."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import threading

from magneton import _core

ENV = "MAGNETON_TF_PROFILE"


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


class GraphProfile:
    def __init__(self):
        self._dir: str | None = None
        self.tried = False  # started, or said why not
        self._lock = threading.Lock()  # two threads' first calls at once start it once

    def start(self) -> None:
        """At the first tf.function call (the recorder's slow-path hook)."""
        if self.tried:
            return
        with self._lock:
            if not self.tried:
                self._start()
                self.tried = True

    def _start(self) -> None:
        if not enabled():
            _core.set_meta("tf.profile.off", f"{ENV}=0")
            return
        try:
            from tensorflow.python.profiler import profiler_v2

            self._dir = tempfile.mkdtemp(prefix="magneton-tf-profile-")
            options = profiler_v2.ProfilerOptions(host_tracer_level=2, python_tracer_level=0, device_tracer_level=1)
            profiler_v2.start(self._dir, options=options)
        except Exception as exc:  # another profiler running: the calls stay one op each
            _core.set_meta("tf.profile.off", f"tf.profiler did not start: {type(exc).__name__}: {exc}")
            self._discard()

    def stop(self) -> None:
        """At the recording's end: stop, convert, ingest, remove the folder."""
        if self._dir is None:
            return
        try:
            self._ingest()
        finally:
            self._discard()

    def _discard(self) -> None:
        if self._dir is not None and not os.environ.get("MAGNETON_KEEP_TF_PROFILE"):  # a debugging aid
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def _ingest(self) -> None:
        from tensorflow.python.profiler import profiler_v2

        try:
            profiler_v2.stop()
        except Exception as exc:
            _core.set_meta("tf.profile.error", f"tf.profiler stop: {type(exc).__name__}: {exc}")
            return
        found = sorted(glob.glob(os.path.join(self._dir, "plugins", "profile", "*", "*.xplane.pb")))
        if not found:
            _core.set_meta("tf.profile.error", "tf.profiler wrote no .xplane.pb")
            return
        try:
            from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

            data, ok = _pywrap_profiler_plugin.xspace_to_tools_data(found[-1:], "trace_viewer@")
        except Exception as exc:
            _core.set_meta("tf.profile.error", f"xspace_to_tools_data: {type(exc).__name__}: {exc}")
            return
        if not ok or not data:
            _core.set_meta("tf.profile.error", "xspace_to_tools_data gave no trace")
            return
        try:
            _core.ingest_tf_profile(data if isinstance(data, bytes) else str(data).encode())
        except Exception:
            pass  # tf.profile.error is in the trace's meta
