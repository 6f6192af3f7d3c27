"""The recorder's memory follows what is live, not what ran (issue 15).

A loop whose values all die within a step (x = tanh(x @ w), 128x128) is
recorded for many steps under a data-segment limit (RLIMIT_DATA) set a budget
above what the process uses after a short warm-up. A recorder that holds on to
what it saw (the storages it identified, every value's key, the trace until
stop) outgrows the budget and the run fails; one that lets go of freed
storages and commits the trace as it goes finishes, with every op in the trace.
"""

import os
import sqlite3
import subprocess
import sys
import textwrap

from conftest import require

# 4 000 steps: 8 000 activations of 64 kB, 24 000 ops. Main's recorder (before
# issue 15) grew by ~250 MB over them (its storage table kept up to 4 096 dead
# storages, each pinning its freed data's heap); the budget is well under that
# and well over what the fixed recorder adds (~30 MB).
STEPS = 4000
SIZE = 128
BUDGET_MB = 96

CHILD = textwrap.dedent(
    """
    import resource, sys
    import torch, magneton

    path, steps, size, budget_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w = torch.randn(size, size) / size**0.5
    x = torch.randn(size, size)

    def data_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmData:"):
                return int(line.split()[1]) // 1024

    with magneton.record(path):
        for _ in range(50):  # warm-up: the hook, the writer and their threads' first allocations
            x = torch.tanh(x @ w)
        start_mb = data_mb()
        limit = (start_mb + budget_mb) << 20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        for _ in range(steps):
            x = torch.tanh(x @ w)
        end_mb = data_mb()
    print(f"data segment {start_mb} MB after warm-up, {end_mb} MB at the end; limit {limit >> 20} MB")
    """
)


def test_long_run_stays_within_what_is_live(tmp_path):
    require("torch")
    trace = tmp_path / "long.mtrace"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.run(
        [sys.executable, str(script), str(trace), str(STEPS), str(SIZE), str(BUDGET_MB)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"recording ran out of its {BUDGET_MB} MB budget:\n{proc.stdout}\n{proc.stderr[-3000:]}"

    db = sqlite3.connect(trace)
    meta = dict(db.execute("select key, value from meta").fetchall())
    counts = dict(
        db.execute(
            "select s.value, count(*) from ops o join strings s on s.id = o.name_id "
            "where s.value in ('aten::mm', 'aten::tanh') group by 1"
        ).fetchall()
    )
    links = db.execute(
        "select count(*) from ops o join strings s on s.id = o.name_id where s.value = 'aten::tanh' and o.inputs != ''"
    ).fetchone()[0]
    db.close()
    # Nothing was dropped to stay within the budget: every op is there, with its tensors.
    assert counts == {"aten::mm": STEPS + 50, "aten::tanh": STEPS + 50}
    assert links == STEPS + 50
    # The recorder did let go of the values of freed storages (two per step)
    # and held only what was live at the end.
    assert int(meta["recorder.tensors_forgotten"]) >= STEPS
    assert int(meta["recorder.tensors_held_at_stop"]) < 50_000
    assert "trace.backpressure_waits" in meta
