"""JAX jit mode (the default): jit stays on and the program that runs is the
one the user wrote. Four pieces, all installed while a recording is active:

1. Every jitted call is an op ``jax::jit(<function>)`` with its argument and
   result arrays. Functions jitted while recording keep JAX's C++ fast path
   (jax_jit_wrap.py wraps them). Those jitted before (JAX's own, made at
   import) are told to keep none (``pjit._get_fastpath_data`` returns None),
   so their calls come back to Python, to ``pjit._pjit_call_impl_python``,
   which is wrapped: begin the op (the arrays, the user's line as call path),
   run the compiled executable. Either way the op ends at dispatch and its
   outputs are read later (jit_call_queue.py); with XLA's profile it takes its
   run's span (4).
2. Compilation is an op of its own, ``jax::compile``: the first time a
   (jaxpr, argument types) pair is seen, JAX's own cached lowering and
   compilation are run before the call's op begins (the call then finds
   them cached), and the optimised HLO module (``as_text()``) is kept.
3. XLA's profiler (``jax.profiler.start_trace``, no Python tracer) runs for
   the recording; at stop its perfetto_trace.json and the HLO modules go to
   ``_core.ingest_xla_profile`` (src/record/xla_profile.cc), which nests every
   thunk (fusion, dot, copy) XLA:CPU ran under the op that ran it as
   ``xla::<hlo_op>``, with the primitives and source lines from the HLO
   metadata.
4. The calls' ops, held since their dispatch, are given their runs' spans
   there (their execution), on a lane of their own. Without the profile
   (MAGNETON_JAX_XLA_PROFILE=0) a call's op waits for its outputs instead.

Eager primitives outside any jit are still recorded one by one by the eval
trace hook in jax_recorder.py (its busy flag is shared: a primitive's own
single-op jit is part of that op). docs/JAX.md, "Jit mode"."""

from __future__ import annotations

import glob
import threading
import gzip
import os
import shutil
import tempfile

from magneton import _core
from magneton.recorders import jax_jit_values, jax_jit_wrap, jit_call_queue

MODE_ENV = "MAGNETON_JAX_MODE"


def mode() -> str:
    """"jit" (default) or "eager" (the op-by-op mode with jit disabled)."""
    value = os.environ.get(MODE_ENV, "jit").strip().lower()
    return "eager" if value == "eager" else "jit"


class JitRecording:
    def __init__(self, busy, stamp_state):
        self._busy = busy  # jax_recorder's thread-local: .busy while one of its ops runs
        self._stamp_state = stamp_state  # the jax.config values in effect, as the op's runtime state
        self._pjit = None
        self._orig_fastpath = None
        self._orig_impl = None
        self._trace_dir = None
        self._hlo_texts: list[str] = []
        self.call_names: dict[str, str] = {}
        self._calls = jit_call_queue.CallQueue()  # calls ended at dispatch, outputs not read yet
        self._local = threading.local()  # .wrapped: inside a jax_jit_wrap.RecordedJit's call
        self._hooks = None  # jax_jit_wrap.Hooks, with XLA's profile only
        self._orig_cpp_pjit = None
        self.flush = self._calls.flush  # the eager hook reads them before an op of its own
        self._values = jax_jit_values.ValueReplays(busy)  # --values: per-thunk values, replayed at stop

    def install(self, jax) -> None:
        from jax._src import pjit

        self._pjit = pjit
        self._orig_fastpath = pjit._get_fastpath_data
        self._orig_impl = pjit._pjit_call_impl_python
        pjit._get_fastpath_data = _make_fastpath(self._orig_fastpath, self._local)
        # Calls cached before the recording started would keep their fast path.
        for cache in ("_cpp_pjit_cache_fun_only", "_cpp_pjit_cache_explicit_attributes"):
            getattr(getattr(pjit, cache, None), "clear", lambda: None)()
        self._start_profiler(jax)
        pjit._pjit_call_impl_python = self._make_impl(pjit, self._orig_impl)
        if self._trace_dir is not None:  # calls end at dispatch: jitted functions made from now keep the fast path
            self._hooks = jax_jit_wrap.Hooks(jax, self._busy, self._stamp_state, self._calls, self._local,
                                             self.call_names, self._callee_of.from_text)
            self._orig_cpp_pjit = jax_jit_wrap.install(pjit, self._hooks)

    def uninstall(self) -> None:
        self._calls.flush()
        if self._hooks is not None:
            self._hooks.active = False  # RecordedJit objects the program keeps call straight through
            self._hooks = None
        if self._pjit is not None:
            if self._orig_cpp_pjit is not None:
                self._pjit._cpp_pjit = self._orig_cpp_pjit
                self._orig_cpp_pjit = None
            self._pjit._get_fastpath_data = self._orig_fastpath
            self._pjit._pjit_call_impl_python = self._orig_impl
            self._pjit = None
        if self._trace_dir is not None:
            try:
                self._ingest()
            finally:
                _core.write_held_ops()  # those the profile did not take (it failed or stopped early)
                if not os.environ.get("MAGNETON_KEEP_XLA_PROFILE"):  # a debugging aid: the folder stays
                    shutil.rmtree(self._trace_dir, ignore_errors=True)
                self._trace_dir = None

    def _start_profiler(self, jax) -> None:
        if os.environ.get("MAGNETON_JAX_XLA_PROFILE", "1") == "0":  # the calls are still ops, without XLA's ops
            _core.set_meta("xla.off", "MAGNETON_JAX_XLA_PROFILE=0")
            return
        try:
            options = jax.profiler.ProfileOptions()
            options.python_tracer_level = 0  # every Python call would be an event
            self._trace_dir = tempfile.mkdtemp(prefix="magneton-xla-")
            jax.profiler.start_trace(self._trace_dir, create_perfetto_trace=True, profiler_options=options)
        except Exception as exc:  # another profiler running: the calls are still ops, without XLA's ops
            _core.set_meta("xla.off", f"jax.profiler did not start: {exc}")
            if self._trace_dir is not None:
                shutil.rmtree(self._trace_dir, ignore_errors=True)
            self._trace_dir = None

    def _ingest(self) -> None:
        import jax

        try:
            jax.profiler.stop_trace()
        except Exception as exc:
            _core.set_meta("xla.error", f"jax.profiler.stop_trace: {exc}")
            return
        replays = self._values.replay()  # the profiler stopped: its runs are no thunks of the program
        found = sorted(glob.glob(os.path.join(self._trace_dir, "**", "perfetto_trace.json.gz"), recursive=True))
        if not found:
            _core.set_meta("xla.error", "jax.profiler wrote no perfetto_trace.json.gz")
            return
        with gzip.open(found[-1], "rb") as f:
            text = f.read()
        try:
            _core.ingest_xla_profile(text, self._hlo_texts, replays)
        except Exception:
            pass  # xla.error is in the trace's meta

    def _make_impl(self, pjit, orig):
        begin, end, recording = _core.begin_array_op, _core.end_array_op, _core.recording_open
        busy, stamp_state = self._busy, self._stamp_state
        seen: dict = {}  # (jaxpr, argument types) -> the op's args (hlo_module)
        names = self.call_names = {}  # function name -> op name; non-empty once a call was recorded
        callee_of = self._callee_of = _make_callee_of()
        convert = pjit.convert_to_metaty
        hlo_texts = self._hlo_texts
        # With XLA's profile the call's op ends at its dispatch, and its time
        # becomes its run's from the profile (jit_call_queue.py); without it,
        # the op waits for its outputs and spans dispatch and run.
        calls = self._calls if self._trace_dir is not None else None
        local = self._local
        compiled_names: set = set()
        note_values = self._values.note

        def compile_ahead(args, params):
            """JAX's own lowering and compilation for this call, which it caches
            (pjit._resolve_and_lower is an LRU cache, the computation keeps its
            executable): run here, as an op of its own, the call finds them."""
            from jax._src import config
            from jax._src.interpreters import mlir

            if config.enable_pgle.value:
                return {}
            # Inside a RecordedJit's call its op is open: compilation is beside it, not in it.
            outer = _core.detach_array_op() if getattr(local, "wrapped", False) else -1
            begin("jax::compile", ())
            fname = str(params.get("name", "?"))
            # A function compiled again (other shapes or dtypes) is a
            # recompilation. Whether it is paid once or as the job runs is
            # what its executable's calls say: each call carries the same
            # "executable" (docs/DIFF.md, "One-time compilation").
            op_args = {"function": fname, "compile_kind": "recompile" if fname in compiled_names else "first",
                       "executable": len(seen)}
            compiled_names.add(fname)
            try:
                computation = pjit._resolve_and_lower(
                    [convert(a) for a in args], jaxpr=params["jaxpr"], in_shardings=params["in_shardings"],
                    out_shardings=params["out_shardings"], in_layouts=params["in_layouts"],
                    out_layouts=params["out_layouts"], donated_invars=params["donated_invars"],
                    ctx_mesh=params["ctx_mesh"], name=params["name"], keep_unused=params["keep_unused"],
                    inline=params["inline"], lowering_platforms=None,
                    lowering_parameters=mlir.LoweringParameters(), pgle_profiler=None,
                    compiler_options_kvs=params["compiler_options_kvs"])
                text = computation.compile().as_text()
                hlo_texts.append(text)
                first = text.split("\n", 1)[0]
                if first.startswith("HloModule "):
                    op_args["hlo_module"] = first[10:].split(",", 1)[0].strip()
            except Exception:
                pass  # the call compiles as it would unrecorded
            finally:
                end((), op_args)
                if outer >= 0:
                    _core.reattach_array_op(outer)
            return {k: v for k, v in op_args.items() if k in ("hlo_module", "executable")}

        def impl(*args, **params):
            if getattr(busy, "busy", False) or not recording():
                return orig(*args, **params)
            try:
                # The jaxpr holds the argument types; the shardings and
                # donations are the rest of what JAX compiles per call
                # (convert_to_metaty per argument cost 30 µs each).
                key = (params["jaxpr"], params["in_shardings"], params["donated_invars"], params["in_layouts"])
                op_args = seen.get(key)
            except TypeError:  # unhashable: compiled inside the call, as JAX would
                key, op_args = None, {}
            busy.busy = True
            try:
                stamp_state()
                if op_args is None:
                    op_args = seen[key] = compile_ahead(args, params)
                if getattr(local, "wrapped", False):  # a RecordedJit's call, which records it (jax_jit_wrap.py)
                    local.op_args = op_args
                    result = orig(*args, **params)
                    # --values: the RecordedJit's op is the call; its inputs
                    # are the call's argument leaves, of which these are the
                    # jaxpr's arguments (static ones left out).
                    note_values(key, local.op_id, params, args, op_args.get("hlo_module"),
                                jax_jit_wrap.input_slots(local.inputs, args))
                    return result
                fname = str(params.get("name", "?"))
                name = names.get(fname)
                if name is None:
                    name = names.setdefault(fname, "jax::jit(" + fname + ")")
                if calls is not None:
                    calls.before(args)
                op_id = begin(name, args, "", callee_of(params["jaxpr"]))
                try:
                    result = orig(*args, **params)
                except BaseException:
                    end((), None)
                    raise
                if calls is None:
                    end(result[0], op_args)
                else:
                    calls.dispatched(result[0], op_args, name)
                note_values(key, op_id, params, args, op_args.get("hlo_module"))
                return result
            finally:
                busy.busy = False

        impl.__wrapped__ = orig
        return impl


def _make_callee_of():
    """The frame of the library function a jitted call runs (jax.scipy.linalg's
    expm, jnp.add), from its jaxpr's debug info, as (file, line, function); None
    for the program's own functions and for JAX's dispatch machinery. A
    compiled call runs no Python frame of the function, so without it the call
    path would end at the user's line with nothing naming the API called; in
    eager mode the function's own frames name it (diagnose/api_names.cc)."""
    import jax

    from magneton import call_site
    from magneton.recorders import jax_recorder

    jax_src = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "_src") + os.sep
    dispatch = tuple(jax_src + part for part in jax_recorder._JAX_DISPATCH_PATHS)
    libraries = call_site.library_dirs(os.path.dirname(os.path.abspath(jax.__file__)) + os.sep)
    cache: dict = {}

    def callee_of(closed_jaxpr):
        info = getattr(getattr(closed_jaxpr, "jaxpr", None), "debug_info", None)
        return from_text(getattr(info, "func_src_info", None))

    def from_text(text):
        """The same from "<function> at <file>:<line>" (a jaxpr's func_src_info,
        a jitted callable's _jit_info.fun_sourceinfo)."""
        if not isinstance(text, str):
            return None
        found = cache.get(text, False)
        if found is not False:
            return found
        callee = None
        fn, sep, where = text.rpartition(" at ")
        file, colon, line = where.rpartition(":")
        if sep and colon and line.isdigit() and file.startswith(libraries) and not file.startswith(dispatch):
            callee = (file, int(line), fn)
        cache[text] = callee
        return callee

    callee_of.from_text = from_text
    return callee_of


def _make_fastpath(orig, local):
    """JAX's fast path for a jax_jit_wrap.RecordedJit's call (it records the
    call itself), none for any other: those come back to Python."""

    def fastpath(*args, **kwargs):
        return orig(*args, **kwargs) if getattr(local, "wrapped", False) else None

    return fastpath
