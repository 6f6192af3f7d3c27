"""`magneton eval` on a GPU case where no GPU is visible (CUDA_VISIBLE_DEVICES=-1
hides any): the case is skipped with the reason in the table and the JSON, is
never recorded, and counts in no score."""

import json
import os

from conftest import REPO, run_cli


def test_gpu_case_is_skipped_without_a_visible_gpu(tmp_path, magneton_bin):
    out_json = tmp_path / "eval.json"
    r = run_cli("eval", os.path.join(REPO, "cases"), "--case", "vllm-10811", "--work-dir", str(tmp_path / "runs"),
                "--json", str(out_json), env={"CUDA_VISIBLE_DEVICES": "-1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "vllm-10811: skipped (needs a GPU: " in r.stderr
    assert "skipped" in r.stdout and "needs a GPU" in r.stdout
    assert not (tmp_path / "runs" / "vllm-10811" / "a.mtrace").exists()
    report = json.loads(out_json.read_text())
    (case,) = report["cases"]
    assert case["id"] == "vllm-10811" and not case["ok"]
    assert case["skipped"].startswith("needs a GPU: ")
    for cell in report["sweep"]:
        assert (cell["tp"], cell["fn"], cell["fp"]) == (0, 0, 0)
