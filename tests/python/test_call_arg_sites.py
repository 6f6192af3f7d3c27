"""The call argument behind a region is found on whichever line issued its costly op: here a callable passed in
from the script (`lambda q, db: torch.cdist(q, db, compute_mode=...)`) issues the op, while the shared loop that
calls it issues many other ops (the diagnosis pairs every costly site with the cheap side's site of the same op,
not only the two main sites)."""

import json
import sys
import textwrap

from conftest import require, run_cli

require("torch")

# Sized so that A's direct distances cost ~11x B's matrix-product path quietly: on a loaded machine B's threaded
# path slows far more than A's (up to ~6x measured beside two spinners), and the finding must still be A's.
COMMON = textwrap.dedent("""
    import torch

    def search(distances):
        g = torch.Generator().manual_seed(0)
        db = torch.nn.functional.normalize(torch.randn(4096, 256, generator=g), dim=-1)
        total = 0.0
        with torch.no_grad():
            for _ in range(4):
                q = torch.nn.functional.normalize(torch.randn(256, 256, generator=g), dim=-1)
                total += float(distances(q, db).topk(5, dim=-1, largest=False).values.sum())
        print(round(total, 3))
""")
SIDE = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    from common import search

    search(lambda q, db: torch.cdist(q, db{extra}))
""")


def test_the_argument_on_the_line_that_issues_the_costly_op_is_the_root_cause(tmp_path):
    (tmp_path / "common.py").write_text(COMMON)
    (tmp_path / "a.py").write_text(SIDE.format(extra=', compute_mode="donot_use_mm_for_euclid_dist"'))
    (tmp_path / "b.py").write_text(SIDE.format(extra=""))
    traces = []
    for side in ("a", "b"):
        out = str(tmp_path / f"{side}.mtrace")
        r = run_cli("record", "--values", "-o", out, "--", sys.executable, str(tmp_path / f"{side}.py"))
        assert r.returncode == 0, r.stderr
        traces.append(out)
    report_path = str(tmp_path / "diff.json")
    r = run_cli("diff", *traces, "--no-rerun", "--json", report_path, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    with open(report_path) as f:
        report = json.load(f)
    cdist = [f for f in report["findings"] if f["verdict"] in ("waste", "inconclusive") and "aten::cdist" in f["a"]["ops"]
             and f["costlier_side"] == "A"]
    assert cdist, r.stdout
    # Each iteration's region holds that iteration's work alone on both sides: the later iterations' queries (randn,
    # normalize) go with the cdist that reads them, not into the first iteration's region on one side only.
    assert all(f["a"]["ops"] == f["b"]["ops"] for f in cdist), [(f["a"]["ops"], f["b"]["ops"]) for f in cdist]
    cause = cdist[0]["root_cause"]
    assert cause is not None and cause["kind"] == "call_arg" and cause["name"] == "compute_mode", (cause, r.stdout)
    assert cause["value_a"] == '"donot_use_mm_for_euclid_dist"' and cause["value_b"] == "<default>", cause
    assert cause["where"].endswith("a.py:7"), cause
