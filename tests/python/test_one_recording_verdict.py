"""One recording per side calls clear waste when the evidence is there (docs/DIFF.md "Uncertainty"): a region whose
ops ran under another recorded runtime state is the code's difference, not the machine's, however the rest of the
run moved. The twin: the same program on both sides is no waste."""

import json
import sys
import textwrap

from conftest import require, run_cli

require("torch")

SCRIPT = textwrap.dedent("""
    import sys, torch
    # A probe maps embeddings through three linear maps written in matrix order, y = W1 W2 W3 x, as one einsum:
    # with opt_einsum off the contraction runs left to right (two width^3 products per batch) instead of
    # right to left (width^2 x rows each). At width 1024 that is 2.1 GFLOP against 50 MFLOP per call: opt_einsum's
    # own path search (~1 ms of Python per call on the "on" side) stays small beside it. At width 512 it did not:
    # 272 MFLOP against ~1-2 ms of search came out 1.47x [0.90, 2.88] in one CI run, straddling tau.
    torch.backends.opt_einsum.enabled = sys.argv[1] == "on"
    g = torch.Generator().manual_seed(0)
    w1, w2, w3 = (torch.randn(1024, 1024, generator=g) / 1024 ** 0.5 for _ in range(3))
    total = 0.0
    with torch.no_grad():
        for _ in range(8):
            x = torch.randn(16, 1024, generator=g)
            total += float(torch.einsum("ij,jk,kl,bl->bi", w1, w2, w3, x).abs().mean())
    print(round(total, 4))
""")


def _diff(tmp_path, mode_a, mode_b):
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    a, b = str(tmp_path / f"a-{mode_a}.mtrace"), str(tmp_path / f"b-{mode_b}.mtrace")
    for path, mode in ((a, mode_a), (b, mode_b)):
        r = run_cli("record", "--values", "-o", path, "--", sys.executable, str(script), mode)
        assert r.returncode == 0, r.stderr
    out = str(tmp_path / f"diff-{mode_a}-{mode_b}.json")
    r = run_cli("diff", a, b, "--no-rerun", "--json", out)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        return json.load(f), r.stdout


def test_ops_under_another_runtime_state_are_waste_from_one_recording(tmp_path):
    report, stdout = _diff(tmp_path, "off", "on")
    waste = [f for f in report["findings"] if f["verdict"] == "waste"]
    assert waste, stdout
    top = waste[0]
    assert top["costlier_side"] == "A" and "aten::einsum" in top["a"]["ops"], stdout
    assert any("torch.backends.opt_einsum.enabled" in d for d in top["uncertainty"]["differences_in_effect"]), top
    assert top["root_cause"]["kind"] == "runtime_state", top["root_cause"]
    assert top["root_cause"]["name"] == "torch.backends.opt_einsum.enabled", top["root_cause"]


def test_the_same_program_on_both_sides_is_no_waste(tmp_path):
    report, stdout = _diff(tmp_path, "on", "on")
    assert [f for f in report["findings"] if f["verdict"] == "waste"] == [], stdout
    # Nothing differs for any region's ops: the einsum regions were judged on timing alone.
    assert all(f["uncertainty"]["differences_in_effect"] == [] for f in report["findings"]), stdout
