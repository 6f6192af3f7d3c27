"""The recorder interface and registry (python/magneton/recorders/base.py,
registry.py): the built-in recorders listed with availability and
capabilities (`magneton recorders`), a fifth engine plugged in through the
`magneton.recorders` entry-point group with no change to magneton (it records
NumPy's matmul as ops with their arrays), `--recorders` selection, and an
engine that is absent saying why."""

import json
import sys
import textwrap

from conftest import TraceDB, run_cli

ENV = {"OMP_NUM_THREADS": "1", "MAGNETON_ENERGY": "0"}

# A third-party recorder, as a package of someone else's would ship it.
PLUGIN = textwrap.dedent("""\
    import sys

    from magneton import _core
    from magneton.recorders.base import AfterImport, Availability, Capabilities, Recorder, module_present


    class NumpyMatmulRecorder(Recorder):
        name = "numpy-matmul"
        framework = "numpy"

        @classmethod
        def capabilities(cls):
            return Capabilities(ops="numpy.matmul calls", tensors="operands and result",
                                integration="Python wrapper + magneton._core array ops")

        def install(self):
            self.original = None
            _core.add_skipped_code_path(__file__)  # call paths end at the user's line, not this wrapper
            if "numpy" in sys.modules:
                self._wrap(sys.modules["numpy"])
            else:
                sys.meta_path.insert(0, AfterImport("numpy", self._wrap))

        def _wrap(self, np):
            self.np, self.original, self.calls = np, np.matmul, 0
            original = self.original

            def matmul(a, b, *args, **kwargs):
                _core.begin_array_op("numpy::matmul", (a, b))
                try:
                    out = original(a, b, *args, **kwargs)
                finally:
                    _core.end_array_op((out,))
                self.calls += 1
                return out

            np.matmul = matmul

        def uninstall(self):
            if self.original is not None:
                self.np.matmul = self.original

        def engines(self):
            return ["numpy"] if self.original is not None and self.calls else []


    class AbsentRecorder(Recorder):
        name = "absent-engine"
        framework = "magneton_no_such_framework"

        @classmethod
        def capabilities(cls):
            return Capabilities(ops="nothing")

        def install(self):
            raise AssertionError("an unavailable recorder is never installed")

        def uninstall(self):
            pass

        def engines(self):
            return []
""")

SCRIPT = textwrap.dedent("""\
    import numpy as np

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((4, 2), dtype=np.float32)
    print(float(np.matmul(a, b).sum()))
""")


def install_plugin(tmp_path):
    """A plugin module plus the dist-info folder that declares its entry points."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "np_matmul_recorder.py").write_text(PLUGIN)
    info = site / "np_matmul_recorder-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: np-matmul-recorder\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[magneton.recorders]\n"
        "numpy-matmul = np_matmul_recorder:NumpyMatmulRecorder\n"
        "absent-engine = np_matmul_recorder:AbsentRecorder\n")
    return str(site)


def listing(env=None):
    r = run_cli("recorders", "--json", env=env)
    assert r.returncode == 0, r.stderr
    return {row["name"]: row for row in json.loads(r.stdout)}


def test_builtin_recorders_listed_with_capabilities():
    rows = listing()
    assert {"pytorch", "onnxruntime", "jax", "llama.cpp"} <= set(rows)
    torch_row = rows["pytorch"]
    assert torch_row["framework"] == "torch" and torch_row["available"], torch_row
    assert "ATen" in torch_row["capabilities"]["ops"]
    for row in rows.values():
        assert row["reason"], row  # available or not, it says why
        assert "integration" in row["capabilities"], row


def test_plugin_recorder_records_a_fifth_engine(tmp_path):
    site = install_plugin(tmp_path)
    env = {**ENV, "PYTHONPATH": site + ":" + __import__("os").environ.get("PYTHONPATH", "")}
    rows = listing(env)
    assert rows["numpy-matmul"]["available"], rows["numpy-matmul"]
    absent = rows["absent-engine"]
    assert not absent["available"] and "magneton_no_such_framework is not installed" in absent["reason"]

    script = tmp_path / "mm.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "mm.mtrace"
    r = run_cli("record", "--values", "-o", str(trace), "--", sys.executable, str(script), env=env)
    assert r.returncode == 0, r.stderr
    assert "was imported but not recorded" not in r.stderr, r.stderr  # every engine it used was recorded
    db = TraceDB(trace)
    meta = dict(db.query("SELECT key, value FROM meta"))
    assert "numpy" in meta["engine"].split(","), meta["engine"]
    said = {row["name"]: row for row in json.loads(meta["recorders"])}
    assert said["numpy-matmul"]["available"] and said["numpy-matmul"]["recorded_ops"]
    assert not said["absent-engine"]["available"]
    assert said["pytorch"]["available"] and not said["pytorch"]["recorded_ops"]  # the script never imports torch
    (op_id, *_), = db.ops("numpy::matmul")
    assert len(db.tensors(op_id, 0)) == 2 and len(db.tensors(op_id, 1)) == 1
    # The call path ends at the user's line.
    file, line, _ = db.call_path(db.ops("numpy::matmul")[0][2])[-1]
    assert file.endswith("mm.py") and line == 5


def test_recorders_option_selects(tmp_path):
    site = install_plugin(tmp_path)
    env = {**ENV, "PYTHONPATH": site + ":" + __import__("os").environ.get("PYTHONPATH", "")}
    script = tmp_path / "mm.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "sel.mtrace"
    r = run_cli("record", "--recorders", "pytorch", "-o", str(trace), "--", sys.executable, str(script), env=env)
    assert r.returncode == 0, r.stderr
    db = TraceDB(trace)
    said = {row["name"]: row for row in json.loads(dict(db.query("SELECT key, value FROM meta"))["recorders"])}
    assert not said["numpy-matmul"]["available"] and "not selected" in said["numpy-matmul"]["reason"]
    assert db.count("numpy::matmul") == 0
    # Not silent: the program used numpy, whose recorder did not run.
    assert "numpy was imported but not recorded: not selected" in r.stderr, r.stderr

    bad = run_cli("record", "--recorders", "no-such", "-o", str(tmp_path / "bad.mtrace"), "--", sys.executable,
                  str(script), env=env)
    assert bad.returncode == 2 and "unknown recorder(s) no-such" in bad.stderr, bad.stderr
    assert not (tmp_path / "bad.mtrace").exists()  # the program never ran unrecorded
