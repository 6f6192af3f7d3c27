"""Recording a distributed job (`magneton record -- torchrun ...`, docs/ARCHITECTURE.md "Distributed jobs").

The first recorded Python process (the root: the script itself, or the launcher
`torchrun`) records into the trace path as before and leaves the job's base
path in the environment, so that the ranks it starts record too:

- a process started with ``RANK`` and ``WORLD_SIZE`` (torchrun and
  ``torch.distributed.run`` set them) records into ``<stem>.rank<RANK>.mtrace``;
- a ``multiprocessing`` spawn child (``torch.multiprocessing.spawn``) learns its
  rank only when it calls ``init_process_group``, so it records into
  ``<stem>.pid<PID>.mtrace``; `magneton record` renames that trace after its
  rank, or removes it when the process never joined a process group.

Every rank stores its rank, local rank, world size, backend and pid as trace
meta (``dist.*``) as soon as it knows them, so a rank killed mid-run leaves
them in its crash-safe trace. The root notes the exit status of every child it
reaps (a launcher reaps its ranks) and writes ``<stem>.exits.json`` at exit;
`magneton record` joins both into the job manifest (docs/TRACE_FORMAT.md).
"""

import json
import os
import sys

JOB_ENV = "MAGNETON_RECORD_JOB"  # the job's base trace path, for the processes the root starts
_exits: dict = {}


def stem(base_path: str) -> str:
    root, ext = os.path.splitext(base_path)
    return root if ext == ".mtrace" else base_path


def rank_from_env():
    """(rank, local_rank, world_size) set by torchrun, or None."""
    try:
        return int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", os.environ["RANK"])), int(
            os.environ["WORLD_SIZE"])
    except (KeyError, ValueError):
        return None


def is_spawn_child() -> bool:
    # multiprocessing's spawn start method runs `python -c '...spawn_main(...)' --multiprocessing-fork`.
    return "--multiprocessing-fork" in getattr(sys, "orig_argv", sys.argv)


def child_trace_path(base_path: str):
    """Where this non-root process records, or None when it is not a rank."""
    env_rank = rank_from_env()
    if env_rank is not None:
        return f"{stem(base_path)}.rank{env_rank[0]}.mtrace"
    if is_spawn_child():
        return f"{stem(base_path)}.pid{os.getpid()}.mtrace"
    return None


def note_rank_meta(set_meta) -> None:
    """Stores what the environment says about this rank, then wraps
    ``init_process_group`` so the rank and backend are stored once it joins."""
    set_meta("dist.pid", str(os.getpid()))
    env_rank = rank_from_env()
    if env_rank is not None:
        set_meta("dist.rank", str(env_rank[0]))
        set_meta("dist.local_rank", str(env_rank[1]))
        set_meta("dist.world_size", str(env_rank[2]))
    try:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d
    except ImportError:
        return
    if not dist.is_available():
        return
    original = distributed_c10d.init_process_group

    def init_process_group(*args, **kwargs):
        result = original(*args, **kwargs)
        try:
            set_meta("dist.rank", str(dist.get_rank()))
            set_meta("dist.world_size", str(dist.get_world_size()))
            set_meta("dist.backend", str(dist.get_backend()))
            if env_rank is None:
                set_meta("dist.local_rank", os.environ.get("LOCAL_RANK", str(dist.get_rank())))
        except Exception as e:  # the job must not fail because a meta key could not be stored
            set_meta("dist.meta_error", repr(e))
        return result

    init_process_group.__wrapped__ = original
    init_process_group.__doc__ = original.__doc__
    distributed_c10d.init_process_group = init_process_group
    dist.init_process_group = init_process_group


def watch_child_exits(base_path: str) -> None:
    """In the root: remember the exit status of each child process it reaps
    (negative: killed by that signal), and write them at exit."""
    import atexit
    import subprocess

    original_status = subprocess.Popen._handle_exitstatus

    def _handle_exitstatus(self, *args, **kwargs):
        original_status(self, *args, **kwargs)
        _exits[self.pid] = self.returncode

    subprocess.Popen._handle_exitstatus = _handle_exitstatus
    try:
        from multiprocessing import popen_fork
    except ImportError:
        popen_fork = None
    if popen_fork is not None:
        original_poll = popen_fork.Popen.poll

        def poll(self, *args, **kwargs):
            code = original_poll(self, *args, **kwargs)
            if code is not None:
                _exits[self.pid] = code
            return code

        popen_fork.Popen.poll = poll

    def write_exits():
        if not _exits:
            return
        try:
            with open(stem(base_path) + ".exits.json", "w") as f:
                json.dump({str(pid): code for pid, code in _exits.items()}, f)
        except OSError as e:
            print(f"magneton: could not write the exit status of the job's ranks: {e}", file=sys.stderr)

    atexit.register(write_exits)
