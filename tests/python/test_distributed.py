"""Distributed jobs (issue 17): `magneton record -- torchrun ...` on CPU with
the gloo backend, 2 ranks on localhost, the scripts unmodified
(tests/python/dist_scripts/). Each recording takes a few seconds."""
import json
import os
import signal
import socket
import sys

import pytest

from conftest import TraceDB, require, run_cli

require("torch")
import torch.distributed  # noqa: E402

if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this torch has no gloo backend", allow_module_level=True)

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_scripts")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def torchrun_dir(tmp_path_factory):
    """A `torchrun` of this Python, as pip installs it: the one on PATH may
    belong to another environment than the magneton under test."""
    d = tmp_path_factory.mktemp("bin")
    (d / "torchrun").write_text(f"#!{sys.executable}\nimport sys\nfrom torch.distributed.run import main\n"
                                "sys.exit(main())\n")
    (d / "torchrun").chmod(0o755)
    return d


def _torchrun(*script_args, module=False):
    launcher = [sys.executable, "-m", "torch.distributed.run"] if module else ["torchrun"]
    return [*launcher, "--nnodes", "1", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
            "--master-port", str(_free_port()), os.path.join(SCRIPTS, "ddp_train.py"), *script_args]


@pytest.fixture(autouse=True, scope="module")
def _path_with_torchrun(torchrun_dir):
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{torchrun_dir}{os.pathsep}{old}"
    yield
    os.environ["PATH"] = old


def _record(out, command, env=None, values=True):
    args = ["record", "-o", str(out)] + (["--values"] if values else []) + ["--", *command]
    return run_cli(*args, env={"OMP_NUM_THREADS": "1", **(env or {})})


def _manifest(out):
    with open(str(out)[: -len(".mtrace")] + ".mjob") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The same DDP job recorded twice: under torchrun and under python -m torch.distributed.run."""
    d = tmp_path_factory.mktemp("jobs")
    a = _record(d / "a.mtrace", _torchrun())
    b = _record(d / "b.mtrace", _torchrun(module=True))
    return d, a, b


def test_torchrun_job_gives_one_trace_per_rank_and_a_manifest(jobs):
    d, a, b = jobs
    for name, r in (("a", a), ("b", b)):
        assert r.returncode == 0, r.stderr
        m = _manifest(d / f"{name}.mtrace")
        assert m["world_size"] == 2 and m["backend"] == "gloo"
        assert [rank["rank"] for rank in m["ranks"]] == [0, 1]
        for rank in m["ranks"]:
            assert rank["exit_code"] == 0 and rank["signal"] == 0, rank
            assert rank["trace"] == f"{name}.rank{rank['rank']}.mtrace"
            assert rank["ops"] > 0 and rank["pid"] > 0
            db = TraceDB(d / rank["trace"])
            meta = dict(db.query("SELECT key, value FROM meta"))
            assert meta["dist.rank"] == str(rank["rank"])
            assert meta["dist.local_rank"] == str(rank["rank"])
            assert meta["dist.world_size"] == "2" and meta["dist.backend"] == "gloo"
            names = db.op_names()
            # DDP's gradient all-reduce and the barrier are ops like any other.
            assert any(n.startswith("c10d::allreduce") for n in names), sorted(set(names))[:50]
            assert "aten::addmm" in names
        # torchrun itself ran no op: no trace of its own.
        assert not (d / f"{name}.mtrace").exists()
        assert "recorded a job of 2 rank(s)" in r.stderr


def test_show_job_puts_ranks_side_by_side(jobs):
    d, _, _ = jobs
    for arg in (d / "a", d / "a.mjob", d / "a.mtrace"):
        r = run_cli("show", str(arg))
        assert r.returncode == 0, r.stderr
        assert "2 rank(s) of world size 2, backend gloo" in r.stdout
        rows = [line.split() for line in r.stdout.splitlines() if line.strip().split(" ")[0] in ("0", "1")]
        assert [row[0] for row in rows] == ["0", "1"], r.stdout
        assert all("exited normally" in " ".join(row) for row in rows)
        assert all(int(row[3]) > 0 for row in rows), r.stdout  # collectives per rank
    # A rank's trace is still a plain trace.
    assert run_cli("show", str(d / "a.rank0.mtrace")).returncode == 0


def test_diff_two_ranks_of_a_job(jobs):
    d, _, _ = jobs
    r = run_cli("diff", "--no-rerun", str(d / "a.rank0.mtrace"), str(d / "a.rank1.mtrace"))
    assert r.returncode == 0, r.stderr
    assert "energy domain" in r.stdout


def test_diff_two_jobs_pairs_rank_with_rank(jobs):
    d, _, _ = jobs
    r = run_cli("diff", "--no-rerun", str(d / "a"), str(d / "b"))
    assert r.returncode == 0, r.stderr
    assert "=== rank 0 ===" in r.stdout and "=== rank 1 ===" in r.stdout
    table = r.stdout.split("=== job, rank by rank ===")[1].splitlines()
    assert [line.split()[0] for line in table[2:5]] == ["0", "1", "all"], r.stdout
    # A job against a trace is refused with a reason.
    r = run_cli("diff", "--no-rerun", str(d / "a"), str(d / "b.rank0.mtrace"))
    assert r.returncode != 0 and "is not a job" in r.stderr


def test_killed_rank_is_named_and_the_other_traces_stay_readable(tmp_path):
    out = tmp_path / "job.mtrace"
    r = _record(out, _torchrun(), env={"KILL_RANK": "1", "STEPS": "50"}, values=False)
    assert r.returncode != 0
    m = _manifest(out)
    ranks = {rank["rank"]: rank for rank in m["ranks"]}
    assert set(ranks) == {0, 1}, m
    assert ranks[1]["signal"] == signal.SIGKILL and ranks[1]["end"] == "killed by SIGKILL", ranks[1]
    for rank in ranks.values():
        assert rank["trace_error"] == "", rank
        assert rank["ops"] > 0
        assert run_cli("show", str(tmp_path / rank["trace"])).returncode == 0
    assert "rank 1: " in r.stderr and "killed by SIGKILL" in r.stderr
    show = run_cli("show", str(tmp_path / "job"))
    assert show.returncode == 0, show.stderr
    assert "Rank 1 did not finish: killed by SIGKILL" in show.stdout


def _collectives(db):
    """(op name, args) of each c10d:: op, in order."""
    return [(name, json.loads(args)) for name, args in db.query(
        "SELECT s.value, o.args FROM ops o JOIN strings s ON s.id = o.name_id WHERE s.value LIKE 'c10d::%' "
        "ORDER BY o.id")]


def test_script_spawning_its_own_ranks(tmp_path):
    """Also: each collective and point-to-point op records its group, bytes and peers (docs/TRACE_FORMAT.md
    "Collectives"), and `show job` sums the bytes per rank."""
    out = tmp_path / "spawn.mtrace"
    r = _record(out, [sys.executable, os.path.join(SCRIPTS, "spawn_ranks.py"), str(_free_port())], values=False)
    assert r.returncode == 0, r.stderr
    m = _manifest(out)
    assert [rank["rank"] for rank in m["ranks"]] == [0, 1] and m["backend"] == "gloo"
    assert all(rank["exit_code"] == 0 for rank in m["ranks"]), m
    for rank in m["ranks"]:
        db = TraceDB(tmp_path / rank["trace"])
        assert db.count("c10d::allreduce_") == 4
        # Spawned ranks re-execute with the getenv interposer (issue 33: it reaches Python processes only).
        assert "getenv interposer" in dict(db.query("SELECT key, value FROM meta"))["env.names_from"]
        ops = _collectives(db)
        me = rank["rank"]
        for name, args in ops:
            assert args["group_size"] == 2 and args["group_rank"] == me and args["backend"] == "gloo", (name, args)
            assert args["group_ranks"] == [0, 1], (name, args)
            assert args["args"][1] == {"unrecorded": "ProcessGroup"}
        default = [(n, a) for n, a in ops if a["group"] == "0"]
        assert all(a["group_desc"] == "default_pg" for _, a in default)
        reduces = [a for n, a in default if n == "c10d::allreduce_"]
        assert len(reduces) == 3 and all(a["bytes"] == 64 * 4 and a["reduce_op"] == "sum" and a["peers"] == []
                                         for a in reduces)
        # Point to point: rank 0 sends to 1, rank 1 receives from 0; both broadcast from root 1.
        p2p = [(n, a["peers"], a["bytes"]) for n, a in default if n in ("c10d::send", "c10d::recv_")]
        assert p2p == ([("c10d::send", [1], 128)] if me == 0 else [("c10d::recv_", [0], 128)]), ops
        assert [(a["peers"], a["bytes"]) for n, a in default if n == "c10d::broadcast_"] == [([1], 128)]
        # The group made by new_group: another name, its ranks noted from Python.
        other = [(n, a) for n, a in ops if a["group"] != "0"]
        assert [(n, a["bytes"]) for n, a in other] == [("c10d::allreduce_", 32)], ops
    show = run_cli("show", str(tmp_path / "spawn"))
    assert show.returncode == 0, show.stderr
    assert "coll. bytes" in show.stdout
    rows = [line for line in show.stdout.splitlines() if line.split()[:1] in (["0"], ["1"])]
    assert len(rows) == 2 and all("1.06 kB" in row for row in rows), show.stdout  # 3 x 256 + 128 + 128 + 32 B
    # The spawning process's traces were renamed after their rank; none is left by pid.
    assert not list(tmp_path.glob("spawn.pid*"))


def _join_job(tmp_path, mode):
    out = tmp_path / f"{mode}.mtrace"
    command = _torchrun()
    command[-1] = os.path.join(SCRIPTS, "join_uneven.py")
    r = _record(out, [*command, mode])
    assert r.returncode == 0, r.stderr
    return out


def test_join_finished_rank_keeps_running_shadow_collectives(tmp_path):
    """pytorch-181115 on CPU/gloo: under Join, rank 0 runs out of data after 2
    steps but all-reduces for all 12 of rank 1's; training the common steps with
    DDP and letting rank 1 finish alone (the control) all-reduces only twice."""
    join, alone = _join_job(tmp_path, "join"), _join_job(tmp_path, "alone")
    allreduce = {mode: TraceDB(tmp_path / f"{mode}.rank0.mtrace").count("c10d::allreduce_") for mode in ("join", "alone")}
    assert allreduce["join"] > allreduce["alone"] > 0, allreduce
    r = run_cli("diff", "--no-rerun", str(tmp_path / "join"), str(tmp_path / "alone"))
    assert r.returncode == 0, r.stderr
    assert "=== rank 0 ===" in r.stdout and "=== rank 1 ===" in r.stdout
    # Rank 0's extra work is the shadow all-reduces, issued from Join's exit, on
    # A's side only. (Whether its energy clears tau is timing on a shared CPU:
    # not asserted; the region and its diagnosis are deterministic.)
    report = tmp_path / "rank0.json"
    # --min-share 0: the shadow all-reduces are a small share of a CPU rank's job, and diff's default noise floor
    # (1% of the job) makes such a region `small`, without a diagnosis; this test is about what the region holds.
    r = run_cli("diff", "--no-rerun", "--min-share", "0", "--json", str(report),
                str(tmp_path / "join.rank0.mtrace"), str(tmp_path / "alone.rank0.mtrace"))
    assert r.returncode == 0, r.stderr
    shadow = [f for f in json.loads(report.read_text())["findings"]
              if "Join.__exit__" in json.dumps(f["diagnosis"]) and "c10d::allreduce_" in f["a"]["ops"]]
    assert shadow, "no region holds the all-reduces issued from Join.__exit__"
    assert all("c10d::allreduce_" not in f["b"]["ops"] for f in shadow)


def test_ddp_find_unused_parameters_without_unused_parameters(tmp_path):
    """A DDP misconfiguration from the DDP docs and its runtime warning
    ("find_unused_parameters=True was specified in DDP constructor, but did not
    find any unused parameters ... an extra traversal of the autograd graph every
    iteration"): the extra traversal is recorded as the reducer's
    search_unused_parameters on every rank, and the rank diff places it on A's
    side only; the control (the default, False) never runs it. Its root cause
    is the argument itself, at the line that constructed DDP: the search runs
    inside DDP's own forward, so no op's call path passes that line, and the
    script computes the value from the environment, so the two lines read alike
    (docs/DIFF.md "Root cause" 1b)."""
    traces = {}
    for unused in ("1", "0"):
        out = tmp_path / f"unused{unused}.mtrace"
        r = _record(out, _torchrun(), env={"FIND_UNUSED": unused})
        assert r.returncode == 0, r.stderr
        traces[unused] = out
    search = "torch.distributed.ddp.reducer::search_unused_parameters"
    for rank in (0, 1):
        assert TraceDB(tmp_path / f"unused1.rank{rank}.mtrace").count(search) > 0
        assert TraceDB(tmp_path / f"unused0.rank{rank}.mtrace").count(search) == 0
    report = tmp_path / "rank0.json"
    # --min-share 0: a few searches of a 3-layer model are far below 1% of a CPU rank's job (the default noise
    # floor would call the region `small`, without a diagnosis); this test is about what the region holds and why.
    r = run_cli("diff", "--no-rerun", "--min-share", "0", "--json", str(report),
                str(tmp_path / "unused1.rank0.mtrace"), str(tmp_path / "unused0.rank0.mtrace"))
    assert r.returncode == 0, r.stderr
    findings = [f for f in json.loads(report.read_text())["findings"] if search in json.dumps(f["a"])]
    assert findings, "no region holds the reducer's search for unused parameters"
    assert all(search not in json.dumps(f["b"]) for f in findings)
    # The extra work splits off the unmatched pool (start-up collectives both ranks run unmatched) as A's own.
    extra = [f for f in findings if not f["b"]["ops"]]
    assert extra and extra[0]["verdict"] == "waste", findings
    cause = extra[0]["root_cause"]
    assert cause["kind"] == "call_arg" and cause["name"] == "DistributedDataParallel.find_unused_parameters", cause
    assert (cause["value_a"], cause["value_b"]) == ("True", "False"), cause
    assert cause["where"] == os.path.join(SCRIPTS, "ddp_train.py") + ":17", cause  # the DDP(...) line
    # The twin: the same job on both sides constructs DDP alike; no argument is blamed.
    r = run_cli("diff", "--no-rerun", "--min-share", "0", "--json", str(report),
                str(tmp_path / "unused1.rank0.mtrace"), str(tmp_path / "unused1.rank1.mtrace"))
    assert r.returncode == 0, r.stderr
    causes = [f["root_cause"] for f in json.loads(report.read_text())["findings"] if f.get("root_cause")]
    assert all("find_unused_parameters" not in (c or {}).get("name", "") for c in causes), causes
