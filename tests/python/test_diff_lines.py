"""`magneton diff`'s line-level step on a user script whose branch reads an
environment variable: the re-run with the deviation-point function traced
line by line must name the variable, classify it as an environment variable
and show its value on each side."""

import json
import os
import sys

from conftest import TraceDB, fast_path_script, require, run_cli

require("torch")

SCRIPT = fast_path_script("MY_FAST_PATH")


def test_env_var_branch_is_traced_to_its_origin(tmp_path):
    script = tmp_path / "fast_path.py"
    script.write_text(SCRIPT)
    a, b = str(tmp_path / "slow.mtrace"), str(tmp_path / "fast.mtrace")
    for out, value in ((a, "0"), (b, "1")):
        # The variable is part of the command, so that diff can re-run it.
        r = run_cli("record", "--values", "-o", out, "--", "env", f"MY_FAST_PATH={value}", sys.executable,
                    str(script))
        assert r.returncode == 0, r.stderr
    report_path = str(tmp_path / "diff.json")
    r = run_cli("diff", a, b, "--json", report_path, "--min-share", "0.01")
    assert r.returncode == 0, r.stderr
    with open(report_path) as f:
        report = json.load(f)
    flagged = [f for f in report["findings"] if f["verdict"] in ("waste", "trade_off")]
    assert flagged, r.stdout
    lines = [f["diagnosis"]["line_diagnosis"] for f in flagged if f["diagnosis"]["line_diagnosis"]]
    assert lines, r.stdout + r.stderr
    line = lines[0]
    assert line["found"], line
    assert line["function"] == f"{script}:work"
    assert line["branch_text"] == "if fast:"
    assert line["text_a"].startswith("return torch.stack") and line["text_b"] == "return x @ w"
    assert line["key_variables"] == ["fast"]
    assert line["origin"]["kind"] == "env_var" and line["origin"]["name"] == "MY_FAST_PATH"
    assert (line["origin"]["value_a"], line["origin"]["value_b"]) == ("'0'", "'1'")
    assert line["origin"]["file"] == str(script) and line["origin"]["line"] == 7
    assert line["config_key"] == "env.MY_FAST_PATH"
    # The candidate --confirm would flip is the variable, with its values.
    top = next(f for f in flagged if f["diagnosis"]["line_diagnosis"])["diagnosis"]["candidates"][0]
    assert (top["key"], top["value_a"], top["value_b"], top["source"]) == ("env.MY_FAST_PATH", "0", "1", "env")
    assert "line trace:" in r.stdout and "env_var `MY_FAST_PATH`" in r.stdout
    # --confirm sets only allowlisted performance knobs (docs/DIFF.md, "--confirm"):
    # MY_FAST_PATH is the program's own, so the command to try is printed, not run
    # (tests/python/test_hostile_rerun.py flips an allowlisted one).
    r = run_cli("diff", a, b, "--min-share", "0.01", "--confirm")
    assert r.returncode == 0, r.stderr
    assert "MY_FAST_PATH is not an allowlisted performance knob" in r.stdout + r.stderr, r.stdout
    assert "env MY_FAST_PATH=1 " in r.stderr, r.stderr
    assert TraceDB(a).count("aten::stack") == 3 and not os.path.exists(a + ".confirm.mtrace")
    # --no-rerun leaves it out.
    r = run_cli("diff", a, b, "--json", report_path, "--min-share", "0.01", "--no-rerun")
    assert r.returncode == 0, r.stderr
    with open(report_path) as f:
        assert all(f["diagnosis"] is None or f["diagnosis"]["line_diagnosis"] is None
                   for f in json.load(f)["findings"])
