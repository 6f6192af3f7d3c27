"""The recorder's memory follows what is live, not what ran (issue 15).

A program whose values all die within a step is recorded for many steps under
a data-segment limit (RLIMIT_DATA) set just above what it uses after a short
warm-up: a recorder that remembers every value it ever saw (or buffers the
trace until stop) runs out of memory; one that forgets freed storages and
commits the trace as it goes finishes, with every op and tensor in the trace.
"""

import os
import sqlite3
import subprocess
import sys
import textwrap

from conftest import require

# 2 400 steps x 1 024 views of a fresh storage: ~2.5 M values, all freed by the
# next step. A recorder keeping each value's key (~100 bytes) needs ~240 MB
# more; the budget is well under half that.
STEPS = 2400
VIEWS = 1024
BUDGET_MB = 96

CHILD = textwrap.dedent(
    """
    import resource, sys
    import torch, magneton

    path, steps, views, budget_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)

    def data_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmData:"):
                return int(line.split()[1]) // 1024

    def step():
        # One op with `views` outputs (unbind's views of one storage), freed
        # by the next step.
        return torch.ones(views, 1).unbind(0)

    with magneton.record(path):
        for _ in range(20):  # warm-up: the hook, the writer and their first allocations
            step()
        limit = (data_mb() + budget_mb) << 20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        for _ in range(steps):
            parts = step()
    print("limit_mb", limit >> 20, "data_mb", data_mb())
    """
)


def test_long_run_stays_within_what_is_live(tmp_path):
    require("torch")
    trace = tmp_path / "long.mtrace"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.run(
        [sys.executable, str(script), str(trace), str(STEPS), str(VIEWS), str(BUDGET_MB)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"recording ran out of its {BUDGET_MB} MB budget:\n{proc.stdout}\n{proc.stderr[-3000:]}"

    db = sqlite3.connect(trace)
    meta = dict(db.execute("select key, value from meta").fetchall())
    unbinds = db.execute(
        "select count(*) from ops o join strings s on s.id = o.name_id where s.value = 'aten::unbind.int'"
    ).fetchone()[0]
    view_rows = db.execute("select count(*) from tensors where shape = '1'").fetchone()[0]
    db.close()
    # Nothing was dropped to stay within the budget: every op and every value is there.
    assert unbinds == STEPS + 20
    assert view_rows >= (STEPS + 20) * VIEWS
    # The positive twin of "within budget": the recorder did let go of the
    # values of freed storages, and held only a bounded number at the end.
    assert int(meta["recorder.tensors_forgotten"]) >= STEPS * VIEWS // 2
    assert int(meta["recorder.tensors_held_at_stop"]) < 100_000
    assert int(meta["trace.backpressure_waits"]) >= 0
