"""`magneton eval cases/` end to end on two cases: one positive (topk-sort) and
one negative control (identical). Checks that the command records both runs of
each case, scores them, prints the table, writes the JSON and a results page
whose energy figures carry their provenance. It checks the shape of the
results, not the tool's accuracy (that is docs/EVALUATION.md's job)."""

import json
import os

from conftest import REPO, require, run_cli


def test_eval_two_cases_end_to_end(tmp_path, magneton_bin):
    require("torch")
    out_json = tmp_path / "eval.json"
    out_md = tmp_path / "EVALUATION.md"
    r = run_cli("eval", os.path.join(REPO, "cases"), "--case", "identical,topk-sort", "--work-dir",
                str(tmp_path / "runs"), "--json", str(out_json), "--markdown", str(out_md))
    assert r.returncode == 0, r.stderr[-3000:]
    # One progress line per case step on stderr.
    for step in ("[1/2] identical: recording a.py", "[1/2] identical: recording b.py",
                 "[2/2] topk-sort: recording a.py", "[2/2] topk-sort: diffing"):
        assert step in r.stderr, r.stderr
    assert "identical" in r.stdout and "topk-sort" in r.stdout
    assert "F1 of detection" in r.stdout
    for side in ("a", "b"):
        assert (tmp_path / "runs" / "topk-sort" / f"{side}.mtrace").exists()

    report = json.loads(out_json.read_text())
    assert report["schema"] == "magneton.eval/1"
    assert [c["id"] for c in report["cases"]] == ["identical", "topk-sort"]
    assert len(report["sweep"]) == 7 * 5
    for case in report["cases"]:
        assert case["ok"], case["error"]
        assert case["energy"]["provenance"] in ("estimated", "measured")
        assert case["energy"]["a_uj"] > 0 and case["energy"]["b_uj"] > 0
        assert len(case["sweep"]) == 7 * 5
    identical, topk = report["cases"]
    assert "root_cause_right" in topk["headline"]
    # topk-sort's A sorts the whole vocabulary: B spends less over the job.
    assert topk["energy"]["saving_share"] > 0
    for cell in report["sweep"]:
        assert cell["tp"] + cell["fn"] == 1  # one positive case
        assert cell["fp"] in (0, 1)          # one control

    page = out_md.read_text()
    assert "magneton eval" in page and "--case identical,topk-sort" in page
    assert "(estimated)" in page or "(measured)" in page
    # A subset run never overwrites the suite's results page by default.
    assert not (tmp_path / "docs").exists()


def test_eval_rejects_an_unknown_case(magneton_bin):
    r = run_cli("eval", os.path.join(REPO, "cases"), "--case", "no-such-case")
    assert r.returncode != 0
    assert "no case 'no-such-case'" in r.stderr
