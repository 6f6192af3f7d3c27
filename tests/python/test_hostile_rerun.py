"""A trace is data, never code (issue 33): what a re-run executes is the
trace's signed re-run plan, as argv (docs/DIFF.md, "Which traces are re-run"),
and --confirm flips only what it can validate (docs/DIFF.md, "--confirm").

Real recordings of a script whose slow path is chosen by an allowlisted
boolean knob, edited with sqlite3 as an attacker would edit a shared trace.
Each attack asserts that no marker file appears, that the refusal names its
reason, and that it ends in bounded time; each has a positive twin."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import TraceDB, fast_path_script, require

require("torch")

KNOB = "TORCH_FAST_PATH_ENABLE"  # a TORCH_*_ENABLE boolean: on --confirm's allowlist
SCRIPT = fast_path_script(KNOB)
TIMEOUT_S = 240


def cli(*args, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(["magneton", *args], capture_output=True, text=True, cwd=cwd, env=full_env,
                          timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    project = root / "project"
    project.mkdir()
    script = project / "fast_path.py"
    script.write_text(SCRIPT)
    a, b, secret = project / "slow.mtrace", project / "fast.mtrace", project / "slow_secret.mtrace"
    for out, value, extra in ((a, "0", []), (b, "1", []), (secret, "0", ["--api-key", "abc123"])):
        r = cli("record", "--values", "-o", str(out), "--", "env", f"{KNOB}={value}", sys.executable, str(script),
                *extra, cwd=str(project))
        assert r.returncode == 0, r.stderr
    return root, script, a, b, secret


def copy_with(src, dst, sql, *params):
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    db.execute(sql, params)
    db.commit()
    db.close()
    return str(dst)


def meta(path, key):
    return TraceDB(path).query("SELECT value FROM meta WHERE key = ?", key)[0][0]


def plan_of(path):
    return json.loads(meta(path, "rerun.plan"))


def with_config(src, dst, key, value, new_key=None):
    """The config row `key` (the candidate --confirm flips) renamed and/or given another value (a row the
    trace already had under the new name, such as env.HOME, gives way)."""
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    if new_key:
        db.execute("DELETE FROM config WHERE key = ?", (new_key,))
    db.execute("UPDATE config SET key = ?, value = ? WHERE key = ?", (new_key or key, value, key))
    db.commit()
    db.close()
    return str(dst)


def test_the_stored_plan_is_argv_signed_whole(recorded):
    root, script, a, b, secret = recorded
    plan = plan_of(a)
    assert plan["argv"] == ["env", f"{KNOB}=0", sys.executable, str(script)], plan
    assert plan["cwd"] == str(script.parent) and plan["version"] == 1
    assert meta(a, "trust.signature").startswith("hmac-sha256:v2:")
    # Redacted element by element; the display string is derived from it.
    assert plan_of(secret)["argv"][-2:] == ["--api-key", "<redacted>"]
    assert meta(secret, "command_line").endswith("--api-key '<redacted>'")


def test_genuine_pair_is_re_run_line_by_line(recorded, tmp_path):
    root, script, a, b, secret = recorded
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    r = cli("diff", a1, str(b), "--min-share", "0.01")
    assert r.returncode == 0, r.stderr
    assert "re-running A and B" in r.stderr and "will not re-run" not in r.stderr, r.stderr
    assert os.path.exists(f"{a1}.lines.A.json") and os.path.exists(f"{a1}.lines.B.json")


def test_a_plan_holding_a_redacted_part_is_never_re_run(recorded, tmp_path):
    root, script, a, b, secret = recorded
    s1 = str(shutil.copy(secret, tmp_path / "s1.mtrace"))
    for extra in ([], ["--rerun"]):
        r = cli("diff", s1, str(b), "--min-share", "0.01", *extra)
        assert r.returncode == 0, r.stderr
        assert "holds a redacted part" in r.stderr, r.stderr
        assert "--api-key '<redacted>'" in r.stderr, r.stderr  # what the user would run, with the real value
        assert not os.path.exists(f"{s1}.lines.A.json"), extra
        assert "holds a redacted part" in r.stdout  # the report says why


def test_edited_command_after_a_redacted_part_runs_nothing(recorded, tmp_path):
    root, script, a, b, secret = recorded
    marker = tmp_path / "pwned"
    payload = f"$(touch {marker};echo x)"
    # Attack 1 as measured on main: the stored command line edited behind the
    # redaction. It is a display string now: nothing runs it.
    s_cmd = copy_with(secret, tmp_path / "s_cmd.mtrace",
                      "UPDATE meta SET value = replace(value, '''<redacted>''', ?) WHERE key = 'command_line'",
                      payload)
    r = cli("diff", s_cmd, str(b), "--min-share", "0.01")
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), r.stderr
    assert "holds a redacted part" in r.stderr, r.stderr
    # The same edit in the plan itself breaks the signature, which covers the plan whole.
    s_plan = copy_with(secret, tmp_path / "s_plan.mtrace",
                       "UPDATE meta SET value = replace(value, '<redacted>', ?) WHERE key = 'rerun.plan'", payload)
    r = cli("diff", s_plan, str(b), "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    r2 = cli("diff", s_plan, str(b), "--min-share", "0.01")
    assert not marker.exists(), r.stderr + r2.stderr
    assert "signature does not match" in r2.stderr, r2.stderr


def test_edited_plan_row_fails_the_signature(recorded, tmp_path):
    root, script, a, b, secret = recorded
    marker = tmp_path / "pwned"
    plan = plan_of(b)
    plan["argv"] = ["/bin/sh", "-c", f"touch {marker}"]
    edited = json.dumps(plan, sort_keys=True, separators=(",", ":"))
    b_edit = copy_with(b, tmp_path / "b_edit.mtrace", "UPDATE meta SET value = ? WHERE key = 'rerun.plan'", edited)
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    r = cli("diff", a1, b_edit, "--min-share", "0.01")
    assert r.returncode == 0, r.stderr
    assert not marker.exists() and not os.path.exists(f"{a1}.lines.A.json")
    assert f"will not re-run the command recorded in {b_edit}" in r.stderr, r.stderr
    assert "signature does not match" in r.stderr and f"/bin/sh -c 'touch {marker}'" in r.stderr, r.stderr
    # A trace without a plan (recorded before plans) is never re-run, even with --rerun.
    b_old = copy_with(b, tmp_path / "b_old.mtrace", "DELETE FROM meta WHERE key = 'rerun.plan'")
    r = cli("diff", a1, b_old, "--min-share", "0.01", "--rerun")
    assert r.returncode == 0, r.stderr
    assert "recorded before re-run plans" in r.stderr, r.stderr
    assert not os.path.exists(f"{a1}.lines.A.json")


def test_confirm_flips_an_allowlisted_knob(recorded, tmp_path):
    root, script, a, b, secret = recorded
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    r = cli("diff", a1, str(b), "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert f"--confirm: re-running A (env {KNOB}=1 " in r.stdout, r.stdout
    assert TraceDB(a1 + ".confirm.mtrace").count("aten::stack") == 0  # the flip took effect


def test_confirm_refuses_a_shell_value_from_the_other_trace(recorded, tmp_path):
    root, script, a, b, secret = recorded
    marker = tmp_path / "pwned"
    a1 = str(shutil.copy(a, tmp_path / "a1.mtrace"))
    # Attack 2: B's unsigned config row carries the value --confirm sets.
    b_edit = with_config(b, tmp_path / "b_edit.mtrace", f"env.{KNOB}", f"1;touch {marker};true")
    r = cli("diff", a1, b_edit, "--min-share", "0.01", "--no-rerun", "--confirm")
    assert not marker.exists() and not os.path.exists(a1 + ".confirm.mtrace"), r.stderr
    assert r.returncode == 0, r.stderr
    assert f"--confirm does not set env.{KNOB}" in (r.stdout + r.stderr) and "is not 0, 1, true or false" in (r.stdout + r.stderr), (r.stdout + r.stderr)
    # The variable renamed to one off the allowlist (RUN_MODE=fast;touch X;true).
    a2 = with_config(a, tmp_path / "a2.mtrace", f"env.{KNOB}", "slow", new_key="env.RUN_MODE")
    b2 = with_config(b, tmp_path / "b2.mtrace", f"env.{KNOB}", f"fast;touch {marker};true", new_key="env.RUN_MODE")
    r = cli("diff", a2, b2, "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert not marker.exists() and not os.path.exists(a2 + ".confirm.mtrace")
    assert "RUN_MODE is not an allowlisted performance knob" in (r.stdout + r.stderr), (r.stdout + r.stderr)
    assert f"'RUN_MODE=fast;touch {marker};true'" in (r.stdout + r.stderr)  # printed for the user, shell-quoted


@pytest.mark.parametrize("name", ["HOME", "CC", "TORCHINDUCTOR_CACHE_DIR", "GCONV_PATH"])
def test_confirm_never_sets_code_loading_variables(recorded, tmp_path, name):
    root, script, a, b, secret = recorded
    # Attack 3: a HOME whose site-packages holds a .pth that would run code.
    evil = tmp_path / "evil"
    site = evil / ".local" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    marker = tmp_path / "pwned"
    (site / "x.pth").write_text(f"import os; open({str(marker)!r}, 'w').close()\n")
    a1 = with_config(a, tmp_path / "a1.mtrace", f"env.{KNOB}", "/usr", new_key=f"env.{name}")
    b1 = with_config(b, tmp_path / "b1.mtrace", f"env.{KNOB}", str(evil), new_key=f"env.{name}")
    r = cli("diff", a1, b1, "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert not marker.exists() and not os.path.exists(a1 + ".confirm.mtrace"), r.stdout
    assert f"{name} is not an allowlisted performance knob" in (r.stdout + r.stderr), (r.stdout + r.stderr)


@pytest.mark.parametrize("key", ["torch.sys.path", "os.system", "torch.ops.load_library"])
def test_confirm_never_walks_an_attribute_path_from_a_trace(recorded, tmp_path, key):
    root, script, a, b, secret = recorded
    a1 = copy_with(a, tmp_path / "a1.mtrace", "UPDATE config SET key = ?, value = ?, source = 'global_flag' "
                   "WHERE key = ?", key, "x", f"env.{KNOB}")
    b1 = copy_with(b, tmp_path / "b1.mtrace", "UPDATE config SET key = ?, value = ?, source = 'global_flag' "
                   "WHERE key = ?", key, "evil_module", f"env.{KNOB}")
    r = cli("diff", a1, b1, "--min-share", "0.01", "--no-rerun", "--confirm")
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(a1 + ".confirm.mtrace"), r.stdout
    assert f"--confirm does not set {key}" in (r.stdout + r.stderr) and "known setter" in (r.stdout + r.stderr), (r.stdout + r.stderr)


def run_overrides(tmp_path, entries):
    """The override hook as a --confirm re-run starts it, on MAGNETON_OVERRIDES as given."""
    evil = tmp_path / "evil_module.py"
    marker = tmp_path / "imported"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\n")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from magneton import overrides\n"
            "import torch\n"
            "overrides.activate().apply_global_flags()\n"
            "print(torch.backends.mkldnn.enabled, torch.get_num_threads())\n") % str(tmp_path)
    env = dict(os.environ, MAGNETON_OVERRIDES=json.dumps(entries))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    return r, marker


def test_override_hook_refuses_what_the_cli_would_refuse(tmp_path):
    # Defense in depth: MAGNETON_OVERRIDES is trace data even inside the re-run.
    for entry in ({"key": "torch.sys.path", "value": "['.']", "source": "global_flag"},
                  {"key": "evil_module.x", "value": "1", "source": "global_flag"},
                  {"key": "os.system", "value": "id", "source": "global_flag"},
                  {"key": "torch.backends.mkldnn.enabled", "value": "__import__('evil_module')",
                   "source": "global_flag"},
                  {"key": "call.generate.use_cache", "value": "[1, 2]", "source": "call_arg"}):
        r, marker = run_overrides(tmp_path, [entry])
        assert r.returncode == 3 and "override refused" in r.stderr, (entry, r.stdout, r.stderr)
        assert not marker.exists(), entry
    # An existing flag given a value of another type is not set.
    r, _ = run_overrides(tmp_path, [{"key": "torch.backends.mkldnn.enabled", "value": "7", "source": "global_flag"}])
    assert r.returncode == 0 and "is a bool, not a int" in r.stderr and r.stdout.split()[0] == "True", r.stderr


def test_override_hook_sets_known_flags(tmp_path):
    r, marker = run_overrides(tmp_path, [
        {"key": "torch.backends.mkldnn.enabled", "value": "False", "source": "global_flag"},
        {"key": "torch.get_num_threads", "value": "2", "source": "global_flag"}])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "2"], r.stdout
