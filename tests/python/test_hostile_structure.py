"""A hostile trace never hangs or blows up the analysis (issue 33).

Real recordings of a tiny torch script, edited with sqlite3 as an attacker
would: an op made its own parent (parent_back = 0: `magneton diff` spun at
100% CPU until killed), a scope cycle, a call-path cycle, and a parent_back
that is negative or far beyond the first op. `magneton diff`, `magneton
export --perfetto-diff`, `magneton gate` and `magneton.diff` must each end
quickly with a non-zero exit (an exception in Python) and a message naming
the table, the row and the reason. Every call runs in a child process with a
timeout, so a regression fails here instead of hanging the suite. The
positive twin: the unedited pair still diffs."""

import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from conftest import record_env_pair, require, run_cli

require("torch")

# Modules (scopes with parents), a call path through two functions, nested
# ops; the slow side runs the layer row by row. The fuzzer's seed pair
# (fuzz/seed_traces/analysis_diff/) is this script recorded both ways.
SCRIPT = textwrap.dedent("""
    import os
    import torch


    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            if os.environ.get("MAGNETON_FAST", "0") == "1":
                return self.fc(x)
            return torch.stack([self.fc(x[i]) for i in range(x.shape[0])])


    def main():
        torch.manual_seed(0)
        torch.set_num_threads(1)
        net = torch.nn.Sequential(Block(), torch.nn.ReLU())
        x = torch.randn(8, 16)
        with torch.no_grad():
            for _ in range(2):
                y = net(x)
        print(float(y.sum()))


    main()
""")
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    _, a, b = record_env_pair(root, SCRIPT, "MAGNETON_FAST", script_name="layer.py")
    return a, b


def edited(src, dst, sql):
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    db.executescript(sql)
    db.commit()
    db.close()
    return str(dst)


def first_row(path, sql):
    db = sqlite3.connect(path)
    row = db.execute(sql).fetchone()
    db.close()
    assert row is not None, sql
    return row


def magneton(*args, cwd=None):
    """The CLI with a time limit: a hang fails the test instead of the suite."""
    try:
        return subprocess.run(["magneton", *args], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"magneton {' '.join(args)} did not end within {TIMEOUT_S} s")


def python_diff(a, b):
    code = ("import sys, magneton\n"
            "try:\n"
            "    magneton.diff(sys.argv[1], sys.argv[2])\n"
            "except ValueError as e:\n"
            "    print(e, file=sys.stderr)\n"
            "    sys.exit(3)\n")
    try:
        return subprocess.run([sys.executable, "-c", code, a, b], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"magneton.diff({a!r}, {b!r}) did not end within {TIMEOUT_S} s")


# (name, SQL to apply to the slow side's copy, what the message must say).
def hostile_edits(path):
    nested = first_row(path, "SELECT id FROM op_rows WHERE parent_back IS NOT NULL ORDER BY id LIMIT 1")[0]
    scope = first_row(path, "SELECT id FROM scopes WHERE parent_id IS NOT NULL ORDER BY id LIMIT 1")[0]
    call_path = first_row(path, "SELECT id FROM call_paths WHERE parent_id IS NOT NULL ORDER BY id LIMIT 1")[0]
    return [
        ("parent_back_zero", f"UPDATE op_rows SET parent_back = 0 WHERE id = {nested}",
         [f"table op_rows, row id {nested}: parent_back 0 is not positive", "its own parent"]),
        ("scope_cycle", f"UPDATE scopes SET parent_id = {scope} WHERE id = (SELECT parent_id FROM scopes "
                        f"WHERE id = {scope})",
         ["table scopes, row id", "names a later row"]),
        ("call_path_cycle", f"UPDATE call_paths SET parent_id = {call_path} WHERE id = (SELECT parent_id FROM "
                            f"call_paths WHERE id = {call_path})",
         ["table call_paths, row id", "names a later row"]),
        ("parent_back_negative", f"UPDATE op_rows SET parent_back = -1 WHERE id = {nested}",
         [f"table op_rows, row id {nested}: parent_back -1 is not positive", "later op"]),
        ("parent_back_huge", f"UPDATE op_rows SET parent_back = 9223372036854775807 WHERE id = {nested}",
         [f"table op_rows, row id {nested}: parent_back 9223372036854775807", "before the first op"]),
    ]


def test_the_unedited_pair_diffs(recorded):
    a, b = recorded
    r = magneton("diff", str(a), str(b), "--no-rerun")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()


@pytest.fixture(scope="module")
def hostile(recorded, tmp_path_factory):
    a, _ = recorded
    root = tmp_path_factory.mktemp("edited")
    return [(name, edited(a, root / f"{name}.mtrace", sql), want) for name, sql, want in hostile_edits(str(a))]


def check_refused(result, path, want):
    out = result.stderr + result.stdout
    assert result.returncode not in (0, None), out
    assert path in out, out
    for needle in want:
        assert needle in out, out


@pytest.mark.parametrize("index", range(5), ids=["parent_back_zero", "scope_cycle", "call_path_cycle",
                                                  "parent_back_negative", "parent_back_huge"])
def test_every_entry_point_refuses_it_quickly(recorded, hostile, tmp_path, index):
    _, b = recorded
    name, bad, want = hostile[index]
    check_refused(magneton("diff", bad, str(b)), bad, want)
    check_refused(magneton("diff", str(b), bad, "--no-rerun"), bad, want)
    check_refused(magneton("export", "--perfetto-diff", bad, str(b), "-o", str(tmp_path / "d.json")), bad, want)
    r = magneton("gate", "--baseline", str(b), bad)
    check_refused(r, bad, want)
    assert r.returncode == 2, r.stdout + r.stderr  # an error, not a regression
    r = python_diff(bad, str(b))
    assert r.returncode == 3, r.stdout + r.stderr  # ValueError, with the reason
    for needle in want:
        assert needle in r.stderr, r.stderr
