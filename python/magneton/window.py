"""Windowed recording, the Python side: ``magneton.step()``, the steps a
framework already has (an optimizer's ``step()``, the decode steps of HF
``generate``), and the time gate (``--start-after``, ``--duration``). Which
steps are recorded is decided in C++ (``src/record/window.cc``); this module
only reports step boundaries and switches the engines' hooks when the window
opens or closes."""

from __future__ import annotations

import threading

from magneton import _core

_lock = threading.Lock()
_listeners: list = []  # callables(open: bool): engines whose hooks follow the window
_timers: list = []
_state = {"open": True}


def add_listener(fn) -> None:
    """``fn(open)`` is called now and whenever the window opens or closes."""
    with _lock:
        _listeners.append(fn)
        current = _state["open"]
    fn(current)


def _apply(open_now: bool) -> None:
    with _lock:
        if open_now == _state["open"]:
            return
        _state["open"] = open_now
        listeners = list(_listeners)
    for fn in listeners:
        fn(open_now)


def configure(schedule: str | None, start_after_s: float | None, duration_s: float | None) -> None:
    """Called by ``magneton.start`` once the recording is active."""
    if not schedule and start_after_s is None and duration_s is None:
        return
    for name, value in (("start_after", start_after_s), ("duration", duration_s)):
        if value is not None and value < 0:
            raise ValueError(f"{name} must be a number of seconds >= 0, got {value}")
    _core.configure_window(schedule or "", time_gate_open=not start_after_s)
    _apply(_core.recording_open())

    def gate(open_now):
        def fire():
            if _core.is_recording():
                _apply(_core.set_time_gate(open_now))
        return fire

    if start_after_s:
        _timer(start_after_s, gate(True))
    if duration_s is not None:
        _timer((start_after_s or 0) + duration_s, gate(False))


def _timer(delay_s: float, fn) -> None:
    t = threading.Timer(delay_s, fn)
    t.daemon = True
    t.start()
    _timers.append(t)


def step() -> None:
    """Marks the end of one step of the job (a training iteration, a request):
    the ``--window`` schedule counts these. Without a recording it does nothing.
    From the first call on, the steps Magneton counts by itself (optimizer
    steps, decode steps) are not counted."""
    if _core.is_recording():
        _apply(_core.window_step(True))


def auto_step() -> None:
    """A step boundary a framework hook saw."""
    if _core.is_recording():
        _apply(_core.window_step(False))


def reset() -> None:
    """Called by ``magneton.stop``: timers cancelled, listeners dropped."""
    with _lock:
        timers, _timers[:] = list(_timers), []
        _listeners.clear()
        _state["open"] = True
    for t in timers:
        t.cancel()
