"""Identical programs pair op for op even when many tensors share one value
(issue 14): a loop that converges to a fixed point makes thousands of
equivalent tensors, and a model reusing one mask in every layer reads the
same value everywhere. Matching by value alone would pair a long stretch of
one run with a single op of the other."""
import json
import sys

from conftest import require, run_cli

require("torch")

CONVERGING = """
import sys, torch
torch.manual_seed(0)
x = torch.randn(16, 16)
for _ in range(int(sys.argv[1])):
    x = torch.tanh(x @ x.T * 0.01 + 1)
print(float(x.sum()))
"""

SHARED_MASK = """
import torch
torch.manual_seed(0)
layers = [torch.nn.Linear(32, 32) for _ in range(12)]
mask = torch.zeros(8, 32)  # one all-zero tensor that every layer adds
h = torch.randn(8, 32)
with torch.no_grad():
    for layer in layers:
        h = torch.relu(layer(h) + mask)
print(float(h.sum()))
"""


def _record(tmp_path, name, source, *args):
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    out = str(tmp_path / f"{name}.mtrace")
    r = run_cli("record", "--values", "-o", out, "--", sys.executable, str(script), *args)
    assert r.returncode == 0, r.stderr
    return out


def _waste(a, b):
    """The waste findings of `diff a b` (default settings; inconclusive ones are allowed: they claim nothing)."""
    out = a + ".diff.json"
    r = run_cli("diff", a, b, "--no-rerun", "--json", out)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        report = json.load(f)
    return [(f["kind"], f["a"]["ops"][:3], f["energy_ratio"], f["uncertainty"]["note"]) for f in report["findings"]
            if f["verdict"] == "waste"]


def _regions(a, b):
    r = run_cli("match", a, b, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _op_for_op(match):
    """Regions whose two sides hold different ops, and how many ops each side left unmatched. Ops whose result is
    a Python number (the final float(x.sum()): aten::item) have no value to compare; they pair through the region
    of the value they read (docs/MATCHING.md, "Ops with no value to compare"), so nothing is exempt."""
    uneven = [([o["name"] for o in r["ops_a"]], [o["name"] for o in r["ops_b"]]) for r in match["regions"]
              if [o["name"] for o in r["ops_a"]] != [o["name"] for o in r["ops_b"]]]
    return uneven, len(match["unmatched_a"]), len(match["unmatched_b"])


def test_identical_converging_loops_pair_op_for_op(tmp_path):
    a = _record(tmp_path, "loop_a", CONVERGING, "600")
    b = _record(tmp_path, "loop_b", CONVERGING, "600")
    match = _regions(a, b)
    uneven, left_a, left_b = _op_for_op(match)
    assert uneven == [] and left_a == 0 and left_b == 0, (uneven[:5], left_a, left_b)
    # Far more than one region: the loop is cut step by step, not in one piece.
    assert len(match["regions"]) > 600
    # And the identical pair has no waste finding.
    assert _waste(a, b) == []
    # The twin: 20 more steps on one side are really extra work, and matching says so.
    longer = _record(tmp_path, "loop_longer", CONVERGING, "620")
    uneven, left_a, left_b = _op_for_op(_regions(a, longer))
    assert uneven or left_a or left_b


def test_identical_runs_reusing_one_mask_pair_op_for_op(tmp_path):
    a = _record(tmp_path, "mask_a", SHARED_MASK)
    b = _record(tmp_path, "mask_b", SHARED_MASK)
    uneven, left_a, left_b = _op_for_op(_regions(a, b))
    assert uneven == [] and left_a == 0 and left_b == 0, (uneven[:5], left_a, left_b)
    assert _waste(a, b) == []
