"""Started by `magneton record -- python script.py`: begins recording before
the script runs and closes the trace at exit, without changing the script."""

import os
import sys


def _chain_to_next_sitecustomize():
    # Ours shadows any sitecustomize that the environment already had.
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    mod = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        import importlib

        try:
            importlib.import_module("sitecustomize")
        except ImportError:
            pass
    finally:
        sys.path[:] = saved
        if mod is not None:
            sys.modules["sitecustomize"] = mod


def _is_job_rank():
    # A process the recorded program started is recorded only when it is a
    # rank of a distributed job (magneton/_bootstrap/job.py).
    return bool(os.environ.get("MAGNETON_RECORD_JOB")) and (
        ("RANK" in os.environ and "WORLD_SIZE" in os.environ)
        or "--multiprocessing-fork" in getattr(sys, "orig_argv", sys.argv))


def _will_record():
    # The test _start makes, without changing anything.
    return bool(os.environ.get("MAGNETON_RECORD_PATH")) or _is_job_rank()


def _reexec_with_getenv_interposer():
    """A Python process that records but was started without the getenv
    interposer (`magneton record -- sh -c 'python3 x.py'`, torchrun's workers):
    run this interpreter again, same pid and arguments, with the interposer
    preloaded for that exec only (it drops itself from LD_PRELOAD as it loads,
    src/envread/getenv_interposer.cc), so native getenv reads are noted while
    no non-Python process ever has LD_PRELOAD set by magneton. Once: the
    guard variable stops a second exec."""
    lib = os.environ.get("MAGNETON_GETENV_LIB_PATH")
    if os.environ.pop("MAGNETON_GETENV_REEXEC", None) is not None or not lib or not _will_record():
        return
    orig_argv = getattr(sys, "orig_argv", None)  # the script has not been read yet, even from stdin
    if not orig_argv or not sys.executable or not os.path.isfile(lib):
        return
    env = dict(os.environ)
    env["MAGNETON_GETENV_REEXEC"] = "1"
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        os.execve(sys.executable, orig_argv, env)
    except OSError:
        pass  # recorded without native env reads (env.names_from says so)


def _start():
    if os.environ.get("MAGNETON_LINE_TRACE"):  # a `magneton diff` re-run (docs/DIFF.md)
        from magneton import line_trace

        line_trace.activate()
    path = os.environ.pop("MAGNETON_RECORD_PATH", None)
    rank_of_job = False
    if not path:
        if not _is_job_rank():
            return
        from magneton._bootstrap import job

        path = job.child_trace_path(os.environ["MAGNETON_RECORD_JOB"])
        if path is None:
            return
        rank_of_job = True
    # Child processes of the script are not recorded into the same file; the
    # root leaves the job's path (and the bootstrap) to the ranks it starts.
    label = os.environ.pop("MAGNETON_RECORD_LABEL", None)
    command_line = os.environ.pop("MAGNETON_COMMAND_LINE", None)
    rerun_plan = os.environ.pop("MAGNETON_RERUN_PLAN", None)  # record_child.cc: argv, cwd, env, interpreter
    values = os.environ.pop("MAGNETON_RECORD_VALUES", "0") == "1"
    # The getenv interposer (record_child.cc) took itself out of LD_PRELOAD
    # when it loaded; MAGNETON_GETENV_LIB_PATH stays, so the ranks of a job
    # re-execute with it too (_reexec_with_getenv_interposer).
    if rank_of_job:
        os.environ.pop("MAGNETON_RECORD_JOB", None)  # a rank's own children are not ranks
        label = os.path.splitext(os.path.basename(path))[0]
        values = os.environ.get("MAGNETON_RECORD_JOB_VALUES") == "1"
    else:
        os.environ["MAGNETON_RECORD_JOB"] = path
        os.environ["MAGNETON_RECORD_JOB_VALUES"] = "1" if values else "0"

    import atexit

    import magneton
    from magneton import _core
    from magneton import overrides
    from magneton._bootstrap import job

    overrides.activate()  # set only by `magneton diff --confirm` re-runs
    def seconds(name):
        text = os.environ.get(name)
        return float(text) if text else None

    # Not popped: the ranks of a distributed job record the same window.
    magneton.start(path, label=label, command_line=command_line, values=values, rerun_plan=rerun_plan,
                   window=os.environ.get("MAGNETON_RECORD_WINDOW") or None,
                   start_after=seconds("MAGNETON_RECORD_START_AFTER"), duration=seconds("MAGNETON_RECORD_DURATION"))
    atexit.register(magneton.stop)
    if rank_of_job or job.rank_from_env() is not None:
        job.note_rank_meta(_core.set_meta)
    if not rank_of_job:
        job.watch_child_exits(path)


_reexec_with_getenv_interposer()
_chain_to_next_sitecustomize()
_start()
