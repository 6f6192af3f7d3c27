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
        # Inconclusive is a verdict of one recording per side whose interval, or
        # the machine's load, leaves the region open: it must say why (it came
        # out so once while a build ran beside this test).
        assert f["verdict"] in ("waste", "trade_off", "equal", "inconclusive")
        if f["verdict"] == "inconclusive":
            assert f["uncertainty"]["note"], f
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


# --- sessions whose nodes have no names, every creation kind and level -------------------------------------------
# tests/python/ort_scripts/unnamed_graph.py builds MatMul -> Add -> Relu -> MatMul -> Softmax with no node names
# (as hand-built graphs and some exporters leave them); ORT profiles such nodes as "<OpType>_<index>", which the
# saved graph does not carry, so before the recorder named them every op came without tensors.

_UNNAMED = os.path.join(SCRIPTS, "unnamed_graph.py")
_unnamed_cache = {}


def _record_unnamed(tmp_path_factory, kind, level, variant="base"):
    key = (kind, level, variant)
    if key not in _unnamed_cache:
        d = tmp_path_factory.mktemp(f"unnamed_{kind}_{level}_{variant}")
        out = str(d / "trace.mtrace")
        r = run_cli("record", "--values", "-o", out, "--", sys.executable, _UNNAMED, kind, level, variant, str(d))
        assert r.returncode == 0, r.stderr
        assert "have no tensors" not in r.stderr and "not recorded" not in r.stderr, r.stderr
        _unnamed_cache[key] = out
    return _unnamed_cache[key]


@pytest.mark.parametrize("level", ["disable_all", "enable_all"])
@pytest.mark.parametrize("kind", ["path", "external", "bytes", "proto"])
def test_unnamed_nodes_record_tensors(tmp_path_factory, kind, level):
    out = _record_unnamed(tmp_path_factory, kind, level)
    m = meta(out)
    db = TraceDB(out)
    names = db.op_names()
    assert m["ort.session.unknown_nodes"] == "0" and m["ort.session.ambiguous_nodes"] == "0", m
    assert m["ort.session.ops_without_tensors"] == "0", m
    assert m["ort.session.renamed_nodes"] == "5", m
    assert int(m["ort.session.ops"]) == len(names) >= 3, names
    assert names[-1] == "onnx::Softmax"
    if level == "disable_all":  # as built; ENABLE_ALL fuses MatMul+Add(+Relu) into one kernel
        assert names == ["onnx::MatMul", "onnx::Add", "onnx::Relu", "onnx::MatMul", "onnx::Softmax"]
        assert [json.loads(a)["node"] for (a,) in db.query("SELECT args FROM ops ORDER BY id")] == \
            ["MatMul_0", "Add_1", "Relu_2", "MatMul_3", "Softmax_4"]  # ORT's own spelling for unnamed nodes
    # Every op reads and writes tensors, and each op after the first reads what the one before it wrote.
    ops = [op_id for (op_id,) in db.query("SELECT id FROM ops ORDER BY id")]
    for prev, op in zip(ops, ops[1:]):
        assert db.tensors(op, 1), op
        (t,) = db.query("SELECT tensor_id FROM op_tensors WHERE op_id = ? AND role = 0 AND slot = 0", op)[0]
        assert t in db.tensors(prev, 1), (prev, op)
    # --values: the model input and every node output are fingerprinted.
    (n_fp,) = db.query("SELECT count(*) FROM fingerprints")[0]
    assert n_fp == int(m["ort.session.fingerprints"]) >= len(names) + 1
    r = run_cli("show", out)
    assert r.returncode == 0 and "have no tensors" not in r.stdout and "unknown_nodes" not in r.stdout, r.stdout


def _match(a, b):
    r = run_cli("match", "--json", a, b)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _diff(a, b, tmp_path):
    out = str(tmp_path / "diff.json")
    r = run_cli("diff", a, b, "--json", out)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("level", ["disable_all", "enable_all"])
def test_unnamed_same_model_matches_op_for_op(tmp_path_factory, tmp_path, level):
    """The same unnamed model created from a file and from a ModelProto's bytes: every op pairs, no waste."""
    a, b = _record_unnamed(tmp_path_factory, "path", level), _record_unnamed(tmp_path_factory, "proto", level)
    doc = _match(a, b)
    assert doc["regions"], doc
    assert not doc["unmatched_a"] and not doc["unmatched_b"], doc
    paired = sum(len(r["ops_a"]) for r in doc["regions"])
    assert paired == len(TraceDB(a).op_names()) == sum(len(r["ops_b"]) for r in doc["regions"])
    report = _diff(a, b, tmp_path)
    assert report["matched_region_pairs"] >= 1
    assert not [f for f in report["findings"] if f["verdict"] == "waste"], report["findings"]
    assert not [f for f in report["findings"] if f["kind"] == "unmatched" and (f["a"]["ops"] or f["b"]["ops"])]
    assert not _different_ops([(f["a"]["ops"], f["b"]["ops"]) for f in report["findings"]]), report["findings"]


def _different_ops(pairs):
    """(ops of A, ops of B) pairs whose op-name lists differ."""
    return [(a, b) for a, b in pairs if a != b]


@pytest.mark.parametrize("level", ["disable_all", "enable_all"])
def test_unnamed_extra_node_is_extra_work(tmp_path_factory, tmp_path, level):
    """Negative twin of the test above: the same graph with one more node (a second Relu, same values) on side B.
    Matching pairs everything, the extra Relu inside B's side of one region; diff reports that region as B running
    ops A does not."""
    a, b = _record_unnamed(tmp_path_factory, "bytes", level), _record_unnamed(tmp_path_factory, "bytes", level, "extra")
    doc = _match(a, b)
    assert not doc["unmatched_a"] and not doc["unmatched_b"], doc
    regions = [([o["name"] for o in r["ops_a"]], [o["name"] for o in r["ops_b"]]) for r in doc["regions"]]
    (extra,) = _different_ops(regions)
    assert sorted(extra[1]) == sorted(extra[0] + ["onnx::Relu"]), regions
    report = _diff(a, b, tmp_path)
    (finding,) = _different_ops([(f["a"]["ops"], f["b"]["ops"]) for f in report["findings"] if f["kind"] == "matched"])
    assert sorted(finding[1]) == sorted(finding[0] + ["onnx::Relu"]), report["findings"]
    (f,) = [f for f in report["findings"] if (f["a"]["ops"], f["b"]["ops"]) == finding]
    # A few µs of work: its energy may stay within tau, or even come out below A's on a busy machine (the sentence
    # then starts from A); the ops it names never change.
    if f["verdict"] != "equal":
        sentence = f["diagnosis"]["sentence"]
        assert f["diagnosis"]["kind"] == "different_ops", f
        assert ("B runs [onnx::Relu] where A runs [nothing]" in sentence
                or "A runs [nothing] where B runs [onnx::Relu]" in sentence), f


def test_node_names_are_unique_and_stable():
    """ort_node_names.name_nodes on a graph with unnamed nodes, a repeated name and an If with subgraphs."""
    import onnx
    from onnx import TensorProto, helper

    from magneton.recorders.ort_node_names import name_nodes

    def build():
        branch = lambda op, out: helper.make_graph(  # noqa: E731
            [helper.make_node(op, ["x"], [out])], op, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
        nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"], name="dup"),
                 helper.make_node("Abs", ["b"], ["c"], name="dup"), helper.make_node("Relu", ["c"], ["d"], name="Relu_0"),
                 helper.make_node("If", ["cond"], ["e"], then_branch=branch("Neg", "t"), else_branch=branch("Abs", "f"))]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                  [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
        return helper.make_model(graph)

    model = build()
    assert name_nodes(model) == 5  # Relu, the second "dup", If, and one node in each branch
    top = [n.name for n in model.graph.node]
    assert top == ["Relu_0_1", "dup", "dup_2", "Relu_0", "If_4"]  # "Relu_0" is taken by a named node
    branches = {a.name: a.g.node[0].name for a in model.graph.node[4].attribute}
    assert branches == {"then_branch": "If_4/then_branch/Neg_0", "else_branch": "If_4/else_branch/Abs_0"}
    again = build()
    name_nodes(again)
    assert again.SerializeToString() == model.SerializeToString()
    assert name_nodes(model) == 0  # nothing left to name


SUBGRAPH = """
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

branch = lambda op, out: helper.make_graph(
    [helper.make_node(op, ["a"], [out])], op, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2])])
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["a"]),
     helper.make_node("If", ["cond"], ["y"], then_branch=branch("Neg", "t"), else_branch=branch("Abs", "e"))],
    "branchy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
session.run(None, {"x": np.ones(2, np.float32), "cond": np.array(True)})
"""


def test_ops_without_tensors_are_counted_and_said(tmp_path):
    """A node inside an If's branch is profiled, but the top-level graph the ingest links against does not hold it:
    its op has no tensors. record and show must say so with counts (the Relu and the If itself are linked)."""
    script = tmp_path / "branchy.py"
    script.write_text(SUBGRAPH)
    out = str(tmp_path / "branchy.mtrace")
    r = run_cli("record", "-o", out, "--", sys.executable, str(script))
    assert r.returncode == 0, r.stderr
    m = meta(out)
    assert m["ort.session.ops"] == "3" and m["ort.session.unknown_nodes"] == "1", m
    assert m["ort.session.ops_without_tensors"] == "1", m
    assert "ONNX Runtime session 0: 1 of 3 ops have no tensors (1 profile events name no graph node" in r.stderr
    db = TraceDB(out)
    linked = {name: bool(db.tensors(op_id, 0) or db.tensors(op_id, 1))
              for name in db.op_names() for op_id, *_ in db.ops(name)}
    assert linked == {"onnx::Relu": True, "onnx::If": True, "onnx::Neg": False}, linked
    r = run_cli("show", out)
    assert r.returncode == 0, r.stderr
    assert "warning    1 of 3 top-level ops have no tensors" in r.stdout, r.stdout
    assert "ort.session.unknown_nodes = 1" in r.stdout, r.stdout


EXTERNAL_NAMED = """
import os, sys
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

w = numpy_helper.from_array(np.arange(48, dtype=np.float32).reshape(4, 12) / 10, name="W")
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W"], ["y"], name="/layer/MatMul"),
     helper.make_node("Relu", ["y"], ["z"], name="/layer/act/Relu")],
    "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 12])], initializer=[w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(sys.argv[1], "m.onnx")
onnx.save(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
os.chdir("/")  # ORT reads w.bin beside m.onnx, not from the working directory
session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
print(session.run(None, {"x": np.ones((2, 4), np.float32)})[0].sum())
"""


def test_external_data_model_records_values(tmp_path):
    """A model file whose weights live in an external data file, its nodes named (handed to ORT as the user gave
    it): the --values session must find the weights beside the model, where the recorded session found them."""
    script = tmp_path / "external.py"
    script.write_text(EXTERNAL_NAMED)
    out = str(tmp_path / "external.mtrace")
    r = run_cli("record", "--values", "-o", out, "--", sys.executable, str(script), str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "values not recorded" not in r.stderr, r.stderr
    m = meta(out)
    assert m["ort.session.renamed_nodes"] == "0" and m["ort.session.ops_without_tensors"] == "0", m
    assert "ort.session.values_error" not in m, m
    assert m["ort.session.fingerprints"] == "3", m  # x, y, z
