import atexit
import os
import shutil
import sqlite3
import textwrap
import subprocess
import sys
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# Recordings sign with this user's trust key under XDG_CONFIG_HOME
# (docs/DIFF.md): the tests use their own, never ~/.config/magneton/trust.key.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="magneton-test-config-")
atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], True)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def require(module: str):
    """Skips the calling test, with the reason, when an optional framework is absent."""
    return pytest.importorskip(module, reason=f"{module} is not installed (pip install magneton[torch])")


@pytest.fixture
def magneton_bin():
    path = shutil.which("magneton")
    if path is None:
        pytest.fail("the magneton CLI is not on PATH; run scripts/setup")
    return path


def run_cli(*args, check=False, cwd=None, env=None):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(["magneton", *args], capture_output=True, text=True, check=check, cwd=cwd, env=full_env)


class TraceDB:
    """Reads a trace with plain sqlite3, as a user would (docs/TRACE_FORMAT.md)."""

    def __init__(self, path):
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def query(self, sql, *params):
        return self.db.execute(sql, params).fetchall()

    def op_names(self):
        return [r[0] for r in self.query("SELECT s.value FROM ops o JOIN strings s ON s.id = o.name_id ORDER BY o.id")]

    def count(self, name):
        return self.query("SELECT count(*) FROM ops o JOIN strings s ON s.id = o.name_id WHERE s.value = ?", name)[0][0]

    def scope_path(self, scope_id):
        parts = []
        while scope_id is not None:
            name_id, parent = self.query("SELECT name_id, parent_id FROM scopes WHERE id = ?", scope_id)[0]
            parts.append(self.query("SELECT value FROM strings WHERE id = ?", name_id)[0][0])
            scope_id = parent
        return "/".join(reversed(parts))

    def call_path(self, path_id):
        frames = []
        while path_id is not None:
            frame_id, parent = self.query("SELECT frame_id, parent_id FROM call_paths WHERE id = ?", path_id)[0]
            file_id, line, fn_id = self.query("SELECT file_id, line, function_id FROM frames WHERE id = ?", frame_id)[0]
            file = self.query("SELECT value FROM strings WHERE id = ?", file_id)[0][0]
            fn = self.query("SELECT value FROM strings WHERE id = ?", fn_id)[0][0]
            frames.append((file, line, fn))
            path_id = parent
        return list(reversed(frames))

    def ops(self, name):
        return self.query(
            "SELECT o.id, o.scope_id, o.call_path_id, o.parent_id, o.thread_id FROM ops o "
            "JOIN strings s ON s.id = o.name_id WHERE s.value = ? ORDER BY o.id", name)

    def tensors(self, op_id, role):
        return [r[0] for r in self.query(
            "SELECT tensor_id FROM op_tensors WHERE op_id = ? AND role = ? ORDER BY slot", op_id, role)]

    def config(self):
        return dict(self.query("SELECT key, value FROM config"))


def record_env_pair(folder, script_text: str, env_var: str, script_name="fast_path.py"):
    """Writes `script_text` into `folder` and records it twice with --values in that folder,
    `env <env_var>=0 python script` (slow.mtrace) and `=1` (fast.mtrace): real traces of this user's own
    program for the trust, re-run and hostile-trace tests. Returns (script, slow, fast)."""
    script = folder / script_name
    script.write_text(script_text)
    slow, fast = folder / "slow.mtrace", folder / "fast.mtrace"
    for out, value in ((slow, "0"), (fast, "1")):
        r = run_cli("record", "--values", "-o", str(out), "--", "env", f"{env_var}={value}", sys.executable,
                    str(script), cwd=str(folder))
        assert r.returncode == 0, r.stderr
    return script, slow, fast


def fast_path_script(env_var: str) -> str:
    """A script whose work() takes a slow row-by-row path unless `env_var` is "1": the same result either way,
    a branch on an environment variable for the line-level step and re-run tests."""
    return textwrap.dedent(f"""
        import os
        import torch


        def work(x, w):
            fast = os.environ.get("{env_var}", "0") == "1"
            if fast:
                return x @ w
            # The slow path: one row at a time, the same result.
            return torch.stack([x[i] @ w for i in range(x.shape[0])])


        def main():
            torch.manual_seed(0)
            torch.set_num_threads(1)
            x, w = torch.randn(256, 128), torch.randn(128, 128)
            for _ in range(3):
                y = work(x, w)
            print(float(y.sum()))


        main()
    """)
