"""The known-case suite: every case folder is complete, and its two runs are
plain scripts (no magneton) that compute the same result."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, require

CASES = os.path.join(REPO, "cases")
IDS = sorted(d for d in os.listdir(CASES) if os.path.isdir(os.path.join(CASES, d)))
FIELDS = {"id", "category", "waste_side", "region", "root_cause", "fix", "upstream", "needs_gpu"}


@pytest.mark.parametrize("case", IDS)
def test_case_folder_is_complete(case):
    folder = os.path.join(CASES, case)
    for name in ("a.py", "b.py", "expected.json", "README.md"):
        assert os.path.exists(os.path.join(folder, name)), name
    expected = json.load(open(os.path.join(folder, "expected.json")))
    assert FIELDS <= set(expected), FIELDS - set(expected)
    assert expected["id"] == case
    assert expected["category"] in {"M", "A", "R", "control"}
    if expected["category"] != "control":
        assert expected["waste_side"] in {"a", "b"}
        assert expected["root_cause"]["variable"]
    for script in ("a.py", "b.py"):
        assert "magneton" not in open(os.path.join(folder, script)).read()


@pytest.mark.parametrize("case", IDS)
def test_both_runs_compute_the_same_result(case):
    require("torch")
    require("transformers")
    if any("import jax" in open(os.path.join(CASES, case, s)).read() for s in ("a.py", "b.py")):
        require("jax")
    outputs = []
    for script in ("a.py", "b.py"):
        r = subprocess.run([sys.executable, os.path.join(CASES, case, script)], capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, HF_HUB_OFFLINE="1"))
        assert r.returncode == 0, r.stderr[-2000:]
        outputs.append(r.stdout.strip().splitlines()[-1])
    a, b = outputs
    try:
        assert float(a) == pytest.approx(float(b), rel=1e-3, abs=1e-4)
    except ValueError:
        assert a == b
