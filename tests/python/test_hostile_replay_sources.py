"""A shared trace is data, never code (issue 33): replay, report snippets and
the getenv interposer under traces edited as an attacker would (sqlite3 on a
real recording), each beside its positive twin.

- `magneton replay` calls only side-effect-free ATen ops: an op renamed to
  aten::from_file (shared=True, a victim file of the user's) is refused by
  name, the victim is byte-identical, no file appears. A trace that does not
  verify as this user's own is refused unless --allow-untrusted. Python starts
  isolated: an argparse.py beside the trace never runs.
- A report reads source only under the directory `magneton diff` runs in,
  --source-root folders, and a verified trace's own folders (never `/` or
  $HOME), and lists the files it read.
- `magneton record -- sh -c ...`: no non-Python process has LD_PRELOAD, while
  the Python grandchild still notes its native getenv reads."""

import json
import os
import shutil
import sqlite3
import sys
import textwrap
import time
import uuid

import pytest

from conftest import TraceDB, fast_path_script, record_env_pair, require, run_cli

require("torch")

ADD_SCRIPT = textwrap.dedent("""
    import torch
    x = torch.randn(64, 64)
    for _ in range(3):
        y = torch.add(x, x)
        z = torch.mm(x, y)
""")


def copy_with(src, dst, *statements):
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    for sql, params in statements:
        db.execute(sql, params)
    db.commit()
    db.close()
    return str(dst)


def listing(folder):
    return sorted(os.listdir(folder))


@pytest.fixture(scope="module")
def add_trace(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    script = root / "adds.py"
    script.write_text(ADD_SCRIPT)
    out = root / "adds.mtrace"
    r = run_cli("record", "-o", str(out), "--", sys.executable, str(script), cwd=str(root))
    assert r.returncode == 0, r.stderr
    return out


def from_file_copy(add_trace, dst, victim, foreign=False):
    """add_trace with its aten::add.Tensor renamed to aten::from_file, its
    arguments a shared mapping of `victim`; foreign: meta cwd edited too, so
    the signature no longer verifies."""
    (op_id, *_), = TraceDB(str(add_trace)).ops("aten::add.Tensor")[:1]
    args = json.dumps([str(victim), True, 4096, None, None, None, None])
    statements = [("UPDATE strings SET value = 'aten::from_file' WHERE value = 'aten::add.Tensor'", ()),
                  ("UPDATE op_args SET args = ? WHERE id = (SELECT args_id FROM op_rows WHERE id = ?)", (args, op_id))]
    if foreign:
        statements.append(("UPDATE meta SET value = '/tmp/elsewhere' WHERE key = 'cwd'", ()))
    return copy_with(add_trace, dst, *statements), op_id


def test_genuine_trace_replays_its_ops(add_trace, tmp_path):
    (op_id, *_), = TraceDB(str(add_trace)).ops("aten::add.Tensor")[:1]
    r = run_cli("replay", str(add_trace), "--ops", str(op_id), "--min-round-s", "0.02", "--rounds", "2",
                "--no-store", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "aten::add.Tensor" in r.stdout and "refused" not in r.stdout and "not replayed" not in r.stdout, r.stdout


@pytest.mark.parametrize("foreign", [False, True])
def test_replay_refuses_from_file_and_leaves_the_victim_alone(add_trace, tmp_path, foreign):
    victims = tmp_path / "victims"
    victims.mkdir()
    victim = victims / "notes.txt"
    victim.write_bytes(b"the user's own notes\n" * 4)
    before, names = victim.read_bytes(), listing(victims)
    hostile, op_id = from_file_copy(add_trace, tmp_path / "hostile.mtrace", victim, foreign=foreign)
    work = tmp_path / "work"
    work.mkdir()
    flags = ["--allow-untrusted"] if foreign else []
    start = time.monotonic()
    r = run_cli("replay", hostile, "--ops", str(op_id), "--min-round-s", "0.02", "--rounds", "2", *flags,
                cwd=str(work))
    assert time.monotonic() - start < 120
    assert r.returncode == 0, r.stderr
    assert "refused: aten::from_file" in r.stdout, r.stdout + r.stderr
    assert "1 op signature refused" in r.stdout, r.stdout
    assert victim.read_bytes() == before and listing(victims) == names
    assert listing(work) == []
    stored = TraceDB(hostile).query("SELECT error FROM op_replays WHERE op_id = ?", op_id)
    assert stored and stored[0][0].startswith("refused: aten::from_file"), stored


def test_replay_refuses_a_trace_that_does_not_verify(add_trace, tmp_path):
    victim = tmp_path / "notes.txt"
    victim.write_bytes(b"keep me\n")
    hostile, op_id = from_file_copy(add_trace, tmp_path / "foreign.mtrace", victim, foreign=True)
    r = run_cli("replay", hostile, "--ops", str(op_id), "--min-round-s", "0.02", "--rounds", "2", cwd=str(tmp_path))
    assert r.returncode != 0
    assert "will not replay" in r.stderr and "signature does not match" in r.stderr, r.stderr
    assert "--allow-untrusted" in r.stderr, r.stderr
    assert victim.read_bytes() == b"keep me\n"
    assert TraceDB(hostile).query("SELECT count(*) FROM op_replays")[0][0] == 0
    # Another user's key: the genuine trace does not verify either.
    r = run_cli("replay", str(add_trace), "--top", "1", "--no-store", cwd=str(tmp_path),
                env={"XDG_CONFIG_HOME": str(tmp_path / "other-user")})
    assert r.returncode != 0 and "no trust key" in r.stderr, r.stderr


def test_replay_never_imports_from_the_current_directory(add_trace, tmp_path):
    marker = tmp_path / "argparse-ran"
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    trace = shutil.copy(add_trace, downloads / "shared.mtrace")
    for module in ("argparse", "torch", "magneton"):
        (downloads / f"{module}.py").write_text(f"open({str(marker)!r}, 'a').write('{module}\\n')\n")
    r = run_cli("replay", "shared.mtrace", "--top", "1", "--min-round-s", "0.02", "--rounds", "2", "--no-store",
                cwd=str(downloads))
    assert r.returncode == 0, r.stderr  # the trace is this user's own: it replays ...
    assert not marker.exists(), marker.read_text()  # ... with the installed modules only
    assert os.path.exists(trace)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("sources")
    project = root / "project"
    project.mkdir()
    script, a, b = record_env_pair(project, fast_path_script("TORCH_FAST_PATH"), "TORCH_FAST_PATH")
    return root, script, a, b


def diff_texts(a, b, out_dir, cwd, *flags):
    report, html = out_dir / "r.json", out_dir / "r.html"
    r = run_cli("diff", str(a), str(b), "-v", "--json", str(report), "--html", str(html), "--min-share", "0.01",
                "--no-rerun", *flags, cwd=str(cwd))
    assert r.returncode == 0, r.stderr
    with open(report) as f:
        data = json.load(f)
    return r.stdout + r.stderr, data, html.read_text()


def test_verified_traces_show_their_own_lines_and_list_them(recorded, tmp_path):
    root, script, a, b = recorded
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    terminal, data, html = diff_texts(a, b, tmp_path, elsewhere)
    assert "TORCH_FAST_PATH" in json.dumps(data["findings"])
    assert str(script) in data["sources_read"], data["sources_read"]
    assert "sources read:" in terminal and str(script) in terminal.split("sources read:")[1]
    assert "Sources read" in html and str(script) in html


def hostile_copies(recorded, tmp_path, cwd="/", sys_path='["/"]'):
    """Copies of A and B whose frames name a settings.py outside every allowed
    folder, with meta cwd and python.sys_path edited to `/`."""
    root, script, a, b = recorded
    secret = "DB_PASSWORD = 'hunter2-" + uuid.uuid4().hex + "'"
    private = tmp_path / "private"
    private.mkdir()
    settings = private / "settings.py"
    settings.write_text((secret + "\n") * 80)
    statements = [("UPDATE strings SET value = ? WHERE value = ?", (str(settings), str(script))),
                  ("UPDATE meta SET value = ? WHERE key = 'cwd'", (cwd,)),
                  ("UPDATE meta SET value = ? WHERE key = 'python.sys_path'", (sys_path,))]
    return (copy_with(a, tmp_path / "a.mtrace", *statements), copy_with(b, tmp_path / "b.mtrace", *statements),
            settings, secret)


def test_foreign_frames_never_put_other_files_into_reports(recorded, tmp_path):
    a_x, b_x, settings, secret = hostile_copies(recorded, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    terminal, data, html = diff_texts(a_x, b_x, tmp_path, work)
    assert str(settings) in terminal  # the frame still names the file ...
    for text in (terminal, json.dumps(data), html):
        assert "hunter2" not in text  # ... but it is not read
    assert data["sources_read"] == []
    assert "sources read: none" in terminal and "Sources read" in html


def test_verified_trace_with_root_import_path_reads_nothing_outside(recorded, tmp_path):
    # The signature covers meta cwd, not python.sys_path: `/` there is dropped as too wide.
    root, script, a, b = recorded
    a_x, b_x, settings, secret = hostile_copies(recorded, tmp_path, cwd=str(script.parent))
    work = tmp_path / "work"
    work.mkdir()
    terminal, data, html = diff_texts(a_x, b_x, tmp_path, work)
    for text in (terminal, json.dumps(data), html):
        assert "hunter2" not in text


def test_source_root_is_the_users_explicit_consent(recorded, tmp_path):
    a_x, b_x, settings, secret = hostile_copies(recorded, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    terminal, data, html = diff_texts(a_x, b_x, tmp_path, work, "--source-root", str(settings.parent))
    assert "hunter2" in json.dumps(data["findings"])
    assert data["sources_read"] == [str(settings)]
    for too_wide in ("/", os.path.expanduser("~")):
        r = run_cli("diff", a_x, b_x, "--no-rerun", "--source-root", too_wide, cwd=str(work))
        assert r.returncode != 0 and "too wide" in r.stderr, r.stderr


NATIVE_READER = textwrap.dedent("""
    import ctypes
    import subprocess
    import sys
    import torch

    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    assert libc.getenv(b"{read}") == b"native-value"
    subprocess.run(["sh", "-c", "env > {inner}"], check=True)
    torch.add(torch.ones(2), 1)
""")


def test_interposer_reaches_only_python_processes(tmp_path):
    read = "ZZT" + uuid.uuid4().hex[:8].upper() + "_NATIVE_READ"
    inner, outer = tmp_path / "inner-env.txt", tmp_path / "outer-env.txt"
    script = tmp_path / "reader.py"
    script.write_text(NATIVE_READER.format(read=read, inner=inner))
    out = tmp_path / "t.mtrace"
    shell = f"env > {outer}; {sys.executable} {script}"
    r = run_cli("record", "-o", str(out), "--", "sh", "-c", shell, cwd=str(tmp_path), env={read: "native-value"})
    assert r.returncode == 0, r.stderr
    for f in (outer, inner):  # the shell itself, and the shell the Python program started
        names = [line.split("=", 1)[0] for line in f.read_text().splitlines()]
        assert "LD_PRELOAD" not in names, f
    db = TraceDB(str(out))
    assert db.config()["env." + read] == "native-value"  # the Python grandchild's native read is noted
    meta = dict(db.query("SELECT key, value FROM meta"))
    assert "getenv interposer" in meta["env.names_from"]


def test_interposer_in_a_direct_python_child(tmp_path):
    # The positive twin: a Python child gets it without a re-exec, and its children do not inherit it.
    read = "ZZT" + uuid.uuid4().hex[:8].upper() + "_NATIVE_READ"
    inner = tmp_path / "inner-env.txt"
    script = tmp_path / "reader.py"
    script.write_text(NATIVE_READER.format(read=read, inner=inner))
    out = tmp_path / "t.mtrace"
    r = run_cli("record", "-o", str(out), "--", sys.executable, str(script), cwd=str(tmp_path),
                env={read: "native-value"})
    assert r.returncode == 0, r.stderr
    assert "LD_PRELOAD" not in [line.split("=", 1)[0] for line in inner.read_text().splitlines()]
    assert TraceDB(str(out)).config()["env." + read] == "native-value"


def test_python_diff_takes_the_same_source_roots(recorded, tmp_path):
    import magneton

    a_x, b_x, settings, secret = hostile_copies(recorded, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    cwd = os.getcwd()
    os.chdir(work)  # the process's directory is the one allowed folder, as for `magneton diff`
    try:
        plain = magneton.diff(a_x, b_x, min_share=0.01)
        consented = magneton.diff(a_x, b_x, min_share=0.01, source_roots=[settings.parent])
        with pytest.raises(Exception, match="too wide"):
            magneton.diff(a_x, b_x, min_share=0.01, source_roots=["/"])
    finally:
        os.chdir(cwd)
    assert "hunter2" not in json.dumps(plain.json) + plain.html + plain.verbose_text
    assert plain.json["sources_read"] == []
    assert consented.json["sources_read"] == [str(settings)]
