"""ONNX Runtime recording (python/magneton/recorders/ort_recorder.py + src/ort/):
the same tiny GPT-2 weights run once in HF Transformers and once in ONNX
Runtime (exported with torch.onnx), both recorded with values: the ORT side by
`magneton record --values` on an unmodified script, the HF side with
`magneton.record(values=True)` around the forward only (so weight
initialisation stays out). `magneton match` must pair the embedding,
attention, MLP and LM-head regions across the two engines, and `magneton diff`
must report region by region."""

import json
import os
import sys

import pytest

from conftest import TraceDB, require, run_cli

require("torch")
require("transformers")
require("onnxruntime")
require("onnx")

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_scripts")


def _run(*args, cwd=None):
    import subprocess

    r = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, "PYTHONPATH": SCRIPTS + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert r.returncode == 0, r.stderr[-4000:]
    return r


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("ort")
    model, ids = str(d / "gpt2.onnx"), str(d / "ids.npy")
    _run(sys.executable, os.path.join(SCRIPTS, "export_onnx.py"), model)
    _run(sys.executable, "-c", f"import numpy, gpt2_tiny; numpy.save({ids!r}, gpt2_tiny.input_ids().numpy())")
    hf, ort = str(d / "hf.mtrace"), str(d / "ort.mtrace")
    env = {"PYTHONPATH": SCRIPTS + os.pathsep + os.environ.get("PYTHONPATH", "")}
    _run(sys.executable, os.path.join(SCRIPTS, "hf_forward.py"), hf)
    r = run_cli("record", "--values", "-o", ort, "--", sys.executable, os.path.join(SCRIPTS, "ort_forward.py"),
                model, ids, env=env)
    assert r.returncode == 0, r.stderr
    assert "not recorded" not in r.stderr, r.stderr
    return hf, ort


def meta(path):
    return dict(TraceDB(path).query("SELECT key, value FROM meta"))


def test_ort_trace_has_nodes_dataflow_clock_and_config(traces):
    _, ort = traces
    db = TraceDB(ort)
    m = meta(ort)
    assert m["engine"] == "onnxruntime"
    assert m["version.onnxruntime"]
    names = db.op_names()
    assert names.count("onnx::Gemm") >= 8  # c_attn, c_proj, c_fc, c_proj per layer
    assert "onnx::Softmax" in names and "onnx::LayerNormalization" in names
    assert int(m["ort.session.ops"]) == len(names)
    assert int(m["ort.session.unknown_nodes"]) == 0
    # Dataflow: every Softmax reads a tensor some earlier node produced.
    for op_id, *_ in db.ops("onnx::Softmax"):
        (t,) = db.tensors(op_id, 0)
        (producer,) = db.query("SELECT producer_op_id FROM tensors WHERE id = ?", t)[0]
        assert producer is not None and producer < op_id
    # Scopes come from the exporter's node names.
    scopes = {db.scope_path(s) for (s,) in db.query("SELECT DISTINCT scope_id FROM ops")}
    assert any(s.endswith("transformer/h.1/attn") for s in scopes), scopes
    # Node ops lie on the recorder's monotonic clock, inside the recording, in
    # start order; the mapping was checked against the hook's run() bracket.
    assert m["ort.session.clock_method"] == "per_run"
    assert m["ort.session.runs_inside_bracket"] == "1" and m["ort.session.runs_outside_bracket"] == "0"
    assert 0 < int(m["ort.session.clock_error_ns"]) < 1_000_000
    start = int(m["start_monotonic_ns"])
    rows = db.query("SELECT start_ns, end_ns FROM ops ORDER BY id")
    assert all(start < s <= e for s, e in rows)
    assert [s for s, _ in rows] == sorted(s for s, _ in rows)
    # Fingerprints of node outputs and of the model input, no raw values.
    (n_fp,) = db.query("SELECT count(*) FROM fingerprints")[0]
    assert n_fp == int(m["ort.session.fingerprints"]) and n_fp >= len(names)
    # The session options, including config entries, are in the snapshot.
    cfg = db.config()
    assert cfg["ort.session.intra_op_num_threads"] == "1"
    assert cfg["ort.session.config.session.intra_op.allow_spinning"] == "0"
    assert cfg["ort.session.graph_optimization_level"].endswith("ORT_ENABLE_ALL")
    assert "CPUExecutionProvider" in cfg["ort.session.providers"]
    sources = dict(db.query("SELECT key, source FROM config WHERE key LIKE 'ort.%'"))
    assert set(sources.values()) == {"runtime"}
    # The same options are the runtime state of every op of the session (docs/TRACE_FORMAT.md, "Runtime state").
    (state_ids,) = zip(*db.query("SELECT DISTINCT state_id FROM ops"))
    assert len(state_ids) == 1 and state_ids[0] is not None, state_ids
    state = dict(db.query("SELECT key, value FROM runtime_states WHERE state_id = ?", state_ids[0]))
    assert state["ort.intra_op_num_threads"] == "1"
    assert state["ort.config.session.intra_op.allow_spinning"] == "0"
    assert state["ort.providers"] == "CPUExecutionProvider"


def _scopes(ops):
    return [o["scope"] for o in ops]


def _regions_in(doc, part):
    """Region pairs with an op of scope `part` on both sides."""
    return [r for r in doc["regions"] if any(part in s for s in _scopes(r["ops_a"]))
            and any(part in s for s in _scopes(r["ops_b"]))]


def test_match_pairs_regions_across_engines(traces):
    hf, ort = traces
    r = run_cli("match", "--json", hf, ort)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["regions"], doc
    summary = [(_scopes(x["ops_a"]), _scopes(x["ops_b"])) for x in doc["regions"]]
    # The embedding starts at the model inputs on both sides.
    first = doc["regions"][0]
    assert first["starts_at_model_inputs"], summary
    assert any("wte" in s for s in _scopes(first["ops_a"])) and any("wte" in s for s in _scopes(first["ops_b"]))
    for layer in range(2):
        for part in ("attn", "mlp"):
            assert _regions_in(doc, f"h.{layer}/{part}"), (layer, part, summary)
    assert _regions_in(doc, "lm_head"), summary
    # Pairs end at equivalent tensors of the same size on both sides.
    for region in doc["regions"]:
        for out in region["outputs"]:
            count = lambda t: eval("*".join(map(str, t["shape"])) or "1")  # noqa: E731
            assert count(out["a"]) == count(out["b"])


def test_diff_reports_region_by_region(traces, tmp_path):
    hf, ort = traces
    out = str(tmp_path / "diff.json")
    r = run_cli("diff", hf, ort, "--json", out)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        report = json.load(f)
    assert report["schema"] == "magneton.diff/2"
    assert report["energy"]["provenance"] in ("estimated", "measured")
    assert report["a"]["total_uj"] > 0 and report["b"]["total_uj"] > 0
    assert report["matched_region_pairs"] >= 5, r.stdout
    matched = [f for f in report["findings"] if f["kind"] == "matched"]
    assert matched, r.stdout
    for f in report["findings"]:
        assert f["kind"] in ("matched", "outside_ops", "unmatched")
        assert f["verdict"] in ("waste", "trade_off", "equal")
        assert f["a"]["energy_uj"] >= 0 and f["b"]["energy_uj"] >= 0
        assert (f["diagnosis"] is None) == (f["verdict"] == "equal")
    # ONNX ops on side B, ATen ops on side A.
    assert any(op.startswith("onnx::") for f in matched for op in f["b"]["ops"])
    assert any(op.startswith("aten::") for f in matched for op in f["a"]["ops"])


TWO_RUNS = """
import gc, sys
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="W")
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W"], ["y"], name="/layer/MatMul"),
     helper.make_node("Relu", ["y"], ["z"], name="/layer/act/Relu")],
    "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])], initializer=[w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
for seed in (1, 2):
    session.run(None, {"x": np.random.default_rng(seed).standard_normal((2, 4), dtype=np.float32)})
del session  # ORT writes its profile on destruction; magneton must find it
gc.collect()
"""


def test_two_runs_of_a_session_destroyed_before_stop(tmp_path):
    script = tmp_path / "two_runs.py"
    script.write_text(TWO_RUNS)
    out = str(tmp_path / "two.mtrace")
    r = run_cli("record", "--values", "-o", out, "--", sys.executable, str(script))
    assert r.returncode == 0, r.stderr
    m = meta(out)
    assert m["ort.session.runs"] == "2" and m["ort.session.ops"] == "4", m
    assert m["ort.session.clock_method"] == "per_run" and m["ort.session.runs_inside_bracket"] == "2"
    db = TraceDB(out)
    assert db.op_names() == ["onnx::MatMul", "onnx::Relu"] * 2
    mm = [row[0] for row in db.ops("onnx::MatMul")]
    relu = [row[0] for row in db.ops("onnx::Relu")]
    for a, b in zip(mm, relu):
        assert db.tensors(b, 0) == db.tensors(a, 1)  # Relu reads what MatMul wrote in that run
    assert db.tensors(mm[0], 0)[1] == db.tensors(mm[1], 0)[1]  # one weight tensor for both runs
    assert db.tensors(mm[0], 0)[0] != db.tensors(mm[1], 0)[0]  # a new input per run
    # Fingerprinted: x, y, z of each run (the weight is not needed for matching).
    (n_fp,) = db.query("SELECT count(*) FROM fingerprints")[0]
    assert n_fp == 6
    assert db.scope_path(db.ops("onnx::Relu")[0][1]) == "tiny/layer/act"


def test_missing_onnx_says_which_extra_to_install(tmp_path):
    """onnxruntime present, onnx absent (shadowed by a module that fails to
    import): the program still runs and magneton says what to install."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "onnx.py").write_text("raise ImportError('No module named onnx')\n")
    script = tmp_path / "uses_ort.py"
    script.write_text("import onnxruntime\nprint('ran', onnxruntime.__version__)\n")
    out = str(tmp_path / "no_onnx.mtrace")
    r = run_cli("record", "-o", out, "--", sys.executable, str(script),
                env={"PYTHONPATH": str(fake) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert r.returncode == 0, r.stderr
    assert "ran" in r.stdout
    assert "pip install 'magneton[ort]'" in r.stderr
