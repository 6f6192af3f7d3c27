"""A trace never runs anything on its own authority, and a report reads no file
a trace merely names (docs/DIFF.md, "Which traces are re-run";
docs/TRACE_FORMAT.md, "What a trace contains").

Real recordings of a script whose slow path is chosen by an environment
variable: `magneton diff` re-runs them (the line-level step, `--confirm`)
because this user recorded them here; a copy whose stored command was edited
to create a marker file, or the same traces judged under another user's key,
run nothing unless `--rerun` is given. A copy whose frames name files outside
the recorded program shows no source from them."""

import json
import os
import shutil
import sqlite3
import sys

import pytest

from conftest import fast_path_script, record_env_pair, require, run_cli

require("torch")

SCRIPT = fast_path_script("TORCH_FAST_PATH_ENABLE")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("trust")
    project = root / "project"
    project.mkdir()
    script, a, b = record_env_pair(project, SCRIPT, "TORCH_FAST_PATH_ENABLE")
    return root, script, a, b


def copy_with(src, dst, sql, *params):
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    db.execute(sql, params)
    db.commit()
    db.close()
    return str(dst)


def with_command(src, dst, command):
    """The trace with its re-run plan (what a re-run executes) edited to run `command` through a shell."""
    db = sqlite3.connect(src)
    plan = json.loads(db.execute("SELECT value FROM meta WHERE key = 'rerun.plan'").fetchone()[0])
    db.close()
    plan["argv"] = ["/bin/sh", "-c", command]
    return copy_with(src, dst, "UPDATE meta SET value = ? WHERE key = 'rerun.plan'",
                     json.dumps(plan, sort_keys=True, separators=(",", ":")))


def line_diagnoses(report_path):
    with open(report_path) as f:
        report = json.load(f)
    return [f["diagnosis"]["line_diagnosis"] for f in report["findings"]
            if f["diagnosis"] and f["diagnosis"]["line_diagnosis"]]


def test_signed_traces_are_re_run(recorded, tmp_path):
    root, script, a, b = recorded
    a1 = shutil.copy(a, tmp_path / "a1.mtrace")
    report = tmp_path / "r.json"
    r = run_cli("diff", str(a1), str(b), "--json", str(report), "--min-share", "0.01")
    assert r.returncode == 0, r.stderr
    assert "re-running A and B" in r.stderr and "will not re-run" not in r.stderr, r.stderr
    lines = line_diagnoses(report)
    assert lines and lines[0]["found"], r.stdout + r.stderr
    assert lines[0]["origin"]["name"] == "TORCH_FAST_PATH_ENABLE"
    assert os.path.exists(f"{a1}.lines.A.json") and os.path.exists(f"{a1}.lines.B.json")


def test_edited_command_runs_nothing_without_rerun(recorded, tmp_path):
    root, script, a, b = recorded
    marker = tmp_path / "pwned"
    command = f"/bin/sh -c 'touch {marker}'"  # as printed: the plan's argv shell-quoted
    b_edit = with_command(b, tmp_path / "b_edit.mtrace", f"touch {marker}")
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    report = tmp_path / "r.json"
    r = run_cli("diff", a1, b_edit, "--json", str(report), "--min-share", "0.01")
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    assert not os.path.exists(f"{a1}.lines.A.json")  # not A's either: the step needs both
    assert f"will not re-run the command recorded in {b_edit}" in r.stderr, r.stderr
    assert "signature does not match" in r.stderr
    assert command in r.stderr and "pass --rerun" in r.stderr  # the exact command it would run
    assert f"will not re-run the command recorded in {a1}" not in r.stderr  # A is this user's own
    lines = line_diagnoses(report)
    assert lines and not lines[0]["found"] and lines[0]["note"].startswith("not re-run"), lines
    assert "not re-run, a trace is not trusted" in r.stdout  # the terminal report says why

    # --rerun is the user's explicit word: the edited command runs.
    r = run_cli("diff", a1, b_edit, "--min-share", "0.01", "--rerun")
    assert r.returncode == 0, r.stderr
    assert marker.exists(), r.stderr
    assert f"--rerun: running the command recorded in {b_edit}" in r.stderr


def test_another_users_key_runs_nothing(recorded, tmp_path):
    root, script, a, b = recorded
    other_config = tmp_path / "other-user-config"
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    report = tmp_path / "r.json"
    r = run_cli("diff", a1, str(b), "--json", str(report), "--min-share", "0.01",
                env={"XDG_CONFIG_HOME": str(other_config)})
    assert r.returncode == 0, r.stderr
    assert "no trust key" in r.stderr and "will not re-run" in r.stderr, r.stderr
    assert not os.path.exists(f"{a1}.lines.A.json")
    assert not other_config.exists()  # verifying never creates a key
    lines = line_diagnoses(report)
    assert lines and lines[0]["note"].startswith("not re-run"), lines


def test_confirm_needs_both_traces_trusted(recorded, tmp_path):
    root, script, a, b = recorded
    # The positive twin: both signed, the wasteful side A is re-recorded with B's value.
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    r = run_cli("diff", a1, str(b), "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert "--confirm: re-running A (env TORCH_FAST_PATH_ENABLE=1 " in r.stdout, r.stdout
    assert os.path.exists(a1 + ".confirm.mtrace")

    marker = tmp_path / "pwned"
    command = f"/bin/sh -c 'touch {marker}'"  # as printed: the plan's argv shell-quoted
    a_edit = with_command(a, tmp_path / "a_edit.mtrace", f"touch {marker}")
    r = run_cli("diff", a_edit, str(b), "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert "--confirm: nothing re-run: not re-run, a trace is not trusted" in r.stdout, r.stdout
    assert command in r.stderr, r.stderr
    assert not marker.exists() and not os.path.exists(a_edit + ".confirm.mtrace")

    # B supplies the value: an untrusted B is refused even though A's command is A's own.
    b_edit = with_command(b, tmp_path / "b_edit.mtrace", f"touch {marker}")
    a2 = str(shutil.copy(a, tmp_path / "a2.mtrace"))
    r = run_cli("diff", a2, b_edit, "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert "--confirm: nothing re-run" in r.stdout and not os.path.exists(a2 + ".confirm.mtrace"), r.stdout

    r = run_cli("diff", a_edit, str(b), "--min-share", "0.01", "--no-rerun", "--confirm", "--rerun")
    assert marker.exists(), r.stdout + r.stderr  # it wrote no trace, so the re-run itself fails


def test_reports_show_source_only_from_the_recorded_program(recorded, tmp_path):
    root, script, a, b = recorded
    # The positive twin: the script's own lines around the deviation point.
    report = tmp_path / "r.json"
    r = run_cli("diff", str(a), str(b), "--json", str(report), "--min-share", "0.01", "--no-rerun")
    assert r.returncode == 0, r.stderr
    with open(report) as f:
        snippets = [f["diagnosis"]["deviation_point"]["snippet"] for f in json.load(f)["findings"]
                    if f["diagnosis"] and f["diagnosis"]["deviation_point"]]
    assert any(s["file"] == str(script) and any("TORCH_FAST_PATH_ENABLE" in line for line in s["lines"]) for s in snippets)

    outside = tmp_path / "outside"
    outside.mkdir()
    fake_key = outside / "id_rsa"
    fake_key.write_text("-----BEGIN OPENSSH PRIVATE KEY----- not-for-reports\n" * 60)
    other_py = outside / "notes.py"
    other_py.write_text("OUTSIDE_PROGRAM = 'not-for-reports'\n" * 60)
    linked = script.parent / "linked.py"  # inside the project, but a link to a file outside it
    linked.symlink_to(fake_key)
    for i, target in enumerate((str(fake_key), str(other_py), "/etc/passwd", str(linked))):
        rename = "UPDATE strings SET value = ? WHERE value = ?"
        a_x = copy_with(a, tmp_path / f"a{i}.mtrace", rename, target, str(script))
        b_x = copy_with(b, tmp_path / f"b{i}.mtrace", rename, target, str(script))
        report = tmp_path / f"r{i}.json"
        html = tmp_path / f"r{i}.html"
        # The line step too (its source read is refused before anything runs).
        r = run_cli("diff", a_x, b_x, "--json", str(report), "--html", str(html), "--min-share", "0.01")
        assert r.returncode == 0, r.stderr
        texts = r.stdout + r.stderr + report.read_text() + html.read_text()
        assert target in texts  # the frame still names the file ...
        assert "not-for-reports" not in texts and "root:x:0:0" not in texts, target  # ... but it is not read
        with open(report) as f:
            found = json.load(f)["findings"]
        assert all(not f["diagnosis"]["deviation_point"]["snippet"]["lines"]
                   for f in found if f["diagnosis"] and f["diagnosis"]["deviation_point"]), target
