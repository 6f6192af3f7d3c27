"""`magneton eval cases/` end to end on two cases: one positive (topk-sort) and
one negative control (identical). Checks that the command records both runs of
each case, scores them, prints the table, writes the JSON and a results page
whose energy figures carry their provenance; and the outcome of the run: at the
headline setting topk-sort's sort is found on side A with its cause named and
the control stays clean (three pairs each, as the suite runs), in eval's
scoring and, for topk-sort, in a plain `magneton diff` of the same recordings. (The accuracy over the whole suite is docs/EVALUATION.md's
job; these two cases are the clear-cut ones.)"""

import json
import os

from conftest import REPO, require, run_cli


def test_eval_two_cases_end_to_end(tmp_path, magneton_bin):
    require("torch")
    out_json = tmp_path / "eval.json"
    out_md = tmp_path / "EVALUATION.md"
    # Three pairs per case, as the suite is run: one pair of a short run can
    # land on either side of a threshold when the machine's load shifts
    # between its two recordings (the control then shows a "waste" region),
    # and eval counts a region only when most pairs agree (src/eval/repeats.cc).
    r = run_cli("eval", os.path.join(REPO, "cases"), "--case", "identical,topk-sort", "--repeats", "3",
                "--work-dir", str(tmp_path / "runs"), "--json", str(out_json), "--markdown", str(out_md))
    assert r.returncode == 0, r.stderr[-3000:]
    # One progress line per case step on stderr.
    for step in ("[1/2] identical: pair 1/3: recording a.py", "[1/2] identical: pair 3/3: recording b.py",
                 "[2/2] topk-sort: pair 1/3: recording a.py", "[2/2] topk-sort: pair 2/3: diffing"):
        assert step in r.stderr, r.stderr
    assert "identical" in r.stdout and "topk-sort" in r.stdout
    assert "F1 of detection" in r.stdout
    for name in ("a", "b", "a.r2", "b.r2", "a.r3", "b.r3"):
        assert (tmp_path / "runs" / "topk-sort" / f"{name}.mtrace").exists(), name

    report = json.loads(out_json.read_text())
    assert report["schema"] == "magneton.eval/1"
    assert [c["id"] for c in report["cases"]] == ["identical", "topk-sort"]
    assert len(report["sweep"]) == 7 * 5
    for case in report["cases"]:
        assert case["ok"], case["error"]
        assert case["repeats"] == 3
        assert case["energy"]["provenance"] in ("estimated", "measured")
        assert case["energy"]["a_uj"] > 0 and case["energy"]["b_uj"] > 0
        assert len(case["sweep"]) == 7 * 5
    identical, topk = report["cases"]
    # topk-sort's A sorts the whole vocabulary: B spends less over the job.
    assert topk["energy"]["saving_share"] > 0

    # The outcome at the headline setting: the positive case detected, in the
    # expected region (aten::sort on side A), with its cause; the control clean.
    headline = report["options"]["headline"]
    top = topk["headline"]
    assert top["detected"] and top["root_cause_right"] and not top["false_positive"], top
    assert top["note"].startswith("top waste finding") and "runs aten::sort" in top["note"], top
    assert top["top_waste"]["side"] == "A" and top["expected_waste_rank"] == 1, top
    control = identical["headline"]
    assert not control["detected"] and not control["false_positive"], control
    assert control["waste_findings"] == 0 and control["top_waste"] is None, control
    cell = next(c for c in report["sweep"] if (c["epsilon"], c["tau"]) == (headline["epsilon"], headline["tau"]))
    assert (cell["tp"], cell["fn"], cell["fp"]) == (1, 0, 0), cell
    assert cell["f1"] == 1, cell
    # The per-case sweeps agree with the suite's at that cell.
    def own(case):
        return next(c for c in case["sweep"] if (c["epsilon"], c["tau"]) == (headline["epsilon"], headline["tau"]))
    assert own(topk)["detected"], own(topk)
    assert not own(identical)["false_positive"] and own(identical)["waste_findings"] == 0, own(identical)

    # Pair 1 of topk-sort through a plain `magneton diff` at the same setting:
    # the top waste finding is A's sort, issued from topk-sort's a.py.
    runs, out = tmp_path / "runs" / "topk-sort", tmp_path / "topk-sort.diff.json"
    r = run_cli("diff", str(runs / "a.mtrace"), str(runs / "b.mtrace"), "--json", str(out), "--no-rerun",
                "--tau", str(headline["tau"]), "--epsilon", str(headline["epsilon"]),
                "--min-share", str(report["options"]["min_share"]))
    assert r.returncode == 0, r.stderr
    waste = [f for f in json.loads(out.read_text())["findings"] if f["verdict"] == "waste"]
    assert waste, r.stdout
    first = waste[0]
    assert first["costlier_side"] == "A" and "aten::sort" in first["a"]["ops"], first
    assert "aten::sort" not in first["b"]["ops"], first
    frames = [s["user_frame"] for s in first["diagnosis"]["sites_costly"]]
    assert any(os.path.join("topk-sort", "a.py") in f for f in frames), frames

    page = out_md.read_text()
    assert "magneton eval" in page and "--case identical,topk-sort" in page
    assert "(estimated)" in page or "(measured)" in page
    # A subset run never overwrites the suite's results page by default.
    assert not (tmp_path / "docs").exists()


def test_eval_rejects_an_unknown_case(magneton_bin):
    r = run_cli("eval", os.path.join(REPO, "cases"), "--case", "no-such-case")
    assert r.returncode != 0
    assert "no case 'no-such-case'" in r.stderr
