"""The trace file's format (docs/TRACE_FORMAT.md) on real torch recordings: schema version 3 stores ops and tensors
as compact rows with dictionaries, and fingerprints as mfp2; every reader gives what was recorded.

- A version-2 trace (tests/data/trace_v2/tiny_values.mtrace: tiny_values.py recorded with --values by the magneton
  before version 3, mfp1 fingerprints) reads exactly as that magneton read it (tiny_values.expected.json.gz: its
  notebook tables and decoded fingerprints, dumped by that build).
- A new recording of the same program reads the same through the notebook API whether stored as version 3 or
  rewritten as version 2 stored it, and its SQL views (ops, tensors, op_tensors) agree with the reader."""
import gzip
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import REPO, require

require("torch")

import magneton  # noqa: E402
from magneton.recorders import torch_values  # noqa: E402

DATA = os.path.join(REPO, "tests", "data", "trace_v2")


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def dump(path):
    """What the readers give: the notebook tables and every fingerprint decoded by its row's kind."""
    t = magneton.open(path, as_frames=False)
    out = {k: _clean(getattr(t, k)) for k in ("meta", "ops", "tensors", "energy", "config", "device_activities")}
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT tensor_id, kind, data FROM fingerprints ORDER BY tensor_id").fetchall()
    out["fingerprints"] = {str(tid): _clean(torch_values.decode(data, kind)) for tid, kind, data in rows}
    return out


def downgrade_to_v2(path):
    """Rewrites a version-3 trace as version 2 stored it: ops and tensors as tables, no dictionaries."""
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE v2_ops(id INTEGER PRIMARY KEY, name_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,
              start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, parent_id INTEGER, scope_id INTEGER,
              call_path_id INTEGER, correlation_id INTEGER NOT NULL, args TEXT NOT NULL, inputs TEXT NOT NULL,
              outputs TEXT NOT NULL, state_id INTEGER);
            INSERT INTO v2_ops SELECT * FROM ops;
            CREATE TABLE v2_tensors(id INTEGER PRIMARY KEY, storage_addr INTEGER NOT NULL,
              storage_offset INTEGER NOT NULL, shape TEXT NOT NULL, strides TEXT NOT NULL, dtype TEXT NOT NULL,
              device TEXT NOT NULL, version INTEGER NOT NULL, producer_op_id INTEGER);
            INSERT INTO v2_tensors SELECT * FROM tensors;
            DROP VIEW op_tensors; DROP VIEW ops; DROP VIEW tensors;
            DROP TABLE op_rows; DROP TABLE tensor_rows; DROP TABLE op_args; DROP TABLE layouts; DROP TABLE threads;
            ALTER TABLE v2_ops RENAME TO ops; ALTER TABLE v2_tensors RENAME TO tensors;
            CREATE VIEW op_tensors AS
              SELECT o.id AS op_id, 0 AS role, CAST(j.key AS INTEGER) AS slot, CAST(j.value AS INTEGER) AS tensor_id
                FROM ops o, json_each('[' || o.inputs || ']') j WHERE j.value >= 0
              UNION ALL
              SELECT o.id, 1, CAST(j.key AS INTEGER), CAST(j.value AS INTEGER)
                FROM ops o, json_each('[' || o.outputs || ']') j WHERE j.value >= 0;
            UPDATE meta SET value = '2' WHERE key = 'schema_version';
        """)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    out = tmp_path_factory.mktemp("format")
    path = str(out / "tiny.mtrace")
    r = subprocess.run([shutil.which("magneton") or "magneton", "record", "--values", "-o", path, "--", sys.executable,
                        os.path.join(DATA, "tiny_values.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return path


def test_version_2_trace_reads_as_the_magneton_that_wrote_it_read_it(tmp_path):
    path = str(tmp_path / "v2.mtrace")
    shutil.copy(os.path.join(DATA, "tiny_values.mtrace"), path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
        assert {k for (k,) in db.execute("SELECT DISTINCT kind FROM fingerprints")} == {"mfp1"}
    with gzip.open(os.path.join(DATA, "tiny_values.expected.json.gz"), "rt") as f:
        expected = json.load(f)
    got = json.loads(json.dumps(dump(path), sort_keys=True))
    # meta["extra"] (every other meta key) came after the golden file was written: the rest of meta is as it was,
    # and extra is the file's own meta rows.
    extra = got["meta"].pop("extra")
    for key in expected:
        assert got[key] == expected[key], key
    assert len(got["ops"]) == 141 and len(got["fingerprints"]) > 20  # not vacuous
    with sqlite3.connect(path) as db:
        stored = dict(db.execute("SELECT key, value FROM meta"))
    assert extra and all(stored[k] == v for k, v in extra.items())


def test_version_3_recording_reads_the_same_rewritten_as_version_2(recording, tmp_path):
    with sqlite3.connect(recording) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("3",)
        assert {k for (k,) in db.execute("SELECT DISTINCT kind FROM fingerprints")} == {"mfp3"}
        # Repeated text is stored once: far fewer dictionary rows than ops and tensors.
        n_ops, n_args = db.execute("SELECT (SELECT count(*) FROM op_rows), (SELECT count(*) FROM op_args)").fetchone()
        n_tensors, n_layouts = db.execute(
            "SELECT (SELECT count(*) FROM tensor_rows), (SELECT count(*) FROM layouts)").fetchone()
    assert n_args < n_ops / 2 and n_layouts < n_tensors / 2
    v3 = dump(recording)
    assert len(v3["ops"]) > 100 and len(v3["fingerprints"]) > 20
    old = str(tmp_path / "as_v2.mtrace")
    shutil.copy(recording, old)
    downgrade_to_v2(old)
    assert dump(old) == v3


def test_sql_views_agree_with_the_reader(recording):
    t = magneton.open(recording, as_frames=False)
    with sqlite3.connect(recording) as db:
        ops = db.execute("SELECT o.id, s.value, o.thread_id, o.start_ns, o.end_ns, o.parent_id, o.args "
                         "FROM ops o JOIN strings s ON s.id = o.name_id ORDER BY o.id").fetchall()
        links = db.execute("SELECT op_id, role, slot, tensor_id FROM op_tensors ORDER BY op_id, role, slot").fetchall()
        tensors = db.execute("SELECT id, shape, strides, dtype, device, producer_op_id FROM tensors "
                             "ORDER BY id").fetchall()
    assert [(o["op_id"], o["name"], o["thread_id"], o["start_ns"], o["end_ns"], o["parent_id"], o["args"])
            for o in t.ops] == [(i, n, th, s, e, -1 if p is None else p, a) for i, n, th, s, e, p, a in ops]
    from_reader = sorted((o["op_id"], role, slot, tid) for o in t.ops
                         for role, key in ((0, "inputs"), (1, "outputs")) for slot, tid in enumerate(o[key])
                         if tid >= 0)
    assert from_reader == links
    assert len(tensors) == len(t.tensors) > 10
    for row, tensor in zip(tensors, t.tensors):
        assert row[0] == tensor["tensor_id"]
        assert [int(x) for x in row[1].split(",") if x] == list(tensor["shape"])
        assert row[3] == tensor["dtype"] and row[4] == tensor["device"]
