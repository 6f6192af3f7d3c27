"""A program that forks while it is recorded (a DataLoader's workers, an
os.fork() child that exits the normal way) records as before: a child has no
recording of its own, so it neither waits for the recorder's threads it does
not have nor writes into the parent's trace, and the trace and `magneton
record` say how many children there were. Before, the os.fork() child's
atexit stop waited forever for a fingerprint thread that was not there."""

import os
import subprocess
import sys
import textwrap

from conftest import TraceDB, require

require("torch")

PROGRAM = textwrap.dedent("""
    import os, sys, torch
    torch.manual_seed(0)

    class Squares(torch.utils.data.Dataset):
        def __len__(self):
            return 64
        def __getitem__(self, i):
            with open(sys.argv[1], "a") as f:
                f.write(f"{os.getpid()}\\n")
            x = torch.full((16,), float(i))
            return x * x + 1

    loader = torch.utils.data.DataLoader(Squares(), batch_size=8, num_workers=2, multiprocessing_context="fork")
    total = torch.zeros(16)
    for batch in loader:
        total = total + batch.sum(0)
    pid = os.fork()
    if pid == 0:  # its atexit handlers run, magneton's stop among them
        with open(sys.argv[1], "a") as f:
            f.write(f"{os.getpid()}\\n")
        y = torch.ones(32) * 3
        sys.exit(0 if float(y.sum()) == 96.0 else 3)
    _, status = os.waitpid(pid, 0)
    expected = sum(float(i * i + 1) for i in range(64)) * 16
    sys.exit(0 if status == 0 and float(total.sum()) == expected else 4)
""")


def test_a_program_that_forks_records_and_its_children_are_counted(tmp_path):
    script = tmp_path / "forks.py"
    script.write_text(PROGRAM)
    children = tmp_path / "children.txt"
    trace = str(tmp_path / "forks.mtrace")
    r = subprocess.run(["magneton", "record", "--values", "-o", trace, "--", sys.executable, str(script),
                        str(children)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "forked 3 child process(es)" in r.stderr, r.stderr
    db = TraceDB(trace)
    assert dict(db.query("SELECT key, value FROM meta WHERE key = 'recorder.forked_children'")) == {
        "recorder.forked_children": "3"}
    names = set(db.op_names())
    # The parent's own work is there...
    assert {"aten::sum", "aten::add"} <= {n.split(".")[0] for n in names}, sorted(names)
    # ...and nothing from the children: the workers' `x * x + 1` and the child's `ones(32) * 3` ran there only.
    child_pids = {int(line) for line in children.read_text().split()}
    assert len(child_pids) == 3, child_pids
    threads = {t for (t,) in db.query("SELECT DISTINCT thread_id FROM ops")}
    assert not threads & child_pids, (threads, child_pids)
    assert not {"aten::full", "aten::ones"} & {n.split(".")[0] for n in names}, sorted(names)
