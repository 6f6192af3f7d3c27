"""The TensorFlow recorder (python/magneton/recorders/tf_recorder.py): an
unmodified TF 2.x / Keras script under `magneton record --values` (one
recording for the module: TF's import costs seconds), eager ops with their
tensors and values, Keras layer names as scopes, a tf.function call as one
op with the graph nodes TF's profiler saw nested in it (fused by Grappler's
remapper, and not), fast-path fallbacks recorded once, runtime state (a
function's jit_compile) and its setters; and the Keras-vs-torch MLP
(tf_scripts/keras_torch_mlp) matched layer by layer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, TraceDB, require, run_cli

tf = require("tensorflow")

ENV = {"MAGNETON_ENERGY": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}

SCRIPT = textwrap.dedent("""\
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((4,)),
                              keras.layers.Dense(3, activation="relu", name="hidden"),
                              keras.layers.Dense(2, name="out")])
    x = tf.constant(np.arange(8, dtype=np.float32).reshape(2, 4))
    y = tf.matmul(x, tf.ones((4, 3)))
    tf.config.optimizer.set_jit(True)
    z = model(x)


    @tf.function
    def twice(a):
        return tf.matmul(a, a) * 2.0


    w = twice(tf.eye(3))
    n = tf.math.count_nonzero(tf.constant([True, False, True]))
    a, k, c = tf.ones((8, 16)), tf.ones((16, 4)), tf.ones((4,))


    @tf.function
    def dense(a, k, c):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(a, k), c))


    fused = [dense(a, k, c) for _ in range(2)]
    tf.config.optimizer.set_experimental_options({"remapping": False})  # Grappler fuses no more


    @tf.function(jit_compile=False)
    def dense_unfused(a, k, c):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(a, k), c))


    unfused = [dense_unfused(a, k, c) for _ in range(2)]


    @tf.function(jit_compile=True)
    def dense_xla(a, k, c):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(a, k), c))


    compiled = dense_xla(a, k, c)
    print(float(tf.reduce_sum(z)) + float(tf.reduce_sum(w)) + float(y[0, 0]) + int(n)
          + float(tf.reduce_sum(fused[-1] - unfused[-1])) + float(tf.reduce_sum(compiled)))
""")


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def record(folder, script_path, *extra):
    trace = folder / (os.path.basename(os.path.dirname(script_path)) + "-" + os.path.basename(script_path) + ".mtrace")
    r = run_cli("record", *extra, "-o", str(trace), "--", sys.executable, str(script_path), env=ENV)
    assert r.returncode == 0, r.stderr
    return str(trace)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tf")
    script = folder / "small.py"
    script.write_text(SCRIPT)
    return TraceDB(record(folder, script, "--values"))


def eager_ops(db, name):
    """db.ops(name) without the tf.function graphs' nodes (from TF's profiler,
    args {"graph": ...}), which share the eager ops' names."""
    return [row for row in db.ops(name)
            if '"graph":' not in (db.query("SELECT args FROM ops WHERE id = ?", row[0])[0][0] or "")]


def shapes(db, op_id, role):
    return [db.query("SELECT shape FROM tensors WHERE id = ?", t)[0][0] for t in db.tensors(op_id, role)]


def test_eager_ops_with_tensors_values_and_call_paths(small):
    db = small
    matmuls = eager_ops(db, "tf::MatMul")
    first, _, path_id, *_ = matmuls[0]
    assert shapes(db, first, 0) == ["2,4", "4,3"] and shapes(db, first, 1) == ["2,3"]
    # Dataflow: tf.constant of a NumPy array is a tf::Const op producing the
    # first input (a value of its own, whatever address TF reuses), the Fill
    # that tf.ones ran the second.
    def producer(tensor_id):
        (op_id,), = db.query("SELECT producer_op_id FROM tensors WHERE id = ?", tensor_id)
        return db.query("SELECT s.value FROM ops o JOIN strings s ON s.id = o.name_id WHERE o.id = ?", op_id)[0][0]

    assert [producer(t) for t in db.tensors(first, 0)] == ["tf::Const", "tf::Fill"]
    # --values: the output's values are fingerprinted.
    assert db.query("SELECT count(*) FROM fingerprints WHERE tensor_id = ?", db.tensors(first, 1)[0])[0][0] == 1
    frames = db.call_path(path_id)
    user = [f for f in frames if f[0].endswith("small.py")]
    assert user and user[-1][1] == line_of(SCRIPT, "y = tf.matmul")
    assert not any("/tensorflow/python/eager/" in f[0] or "gen_math_ops" in f[0] for f in frames)


def test_keras_layer_names_are_scopes(small):
    db = small
    scopes = {db.scope_path(scope_id) for _, scope_id, *_ in eager_ops(db, "tf::MatMul") if scope_id is not None}
    assert {"sequential/hidden", "sequential/out"} <= scopes
    relu_scopes = {db.scope_path(s) for _, s, *_ in eager_ops(db, "tf::Relu")}
    assert relu_scopes == {"sequential/hidden"}


def test_fast_path_fallback_is_one_op(small):
    """Keras' BiasAdd on a Keras variable: the C++ fast path gives up
    (_FallbackException) and the slow path runs the op; the op is recorded
    once, with the variable's read nested inside it."""
    db = small
    adds = eager_ops(db, "tf::BiasAdd")
    assert len(adds) == 2  # one per Dense layer
    for op_id, *_ in adds:
        assert shapes(db, op_id, 1) in (["2,3"], ["2,2"])
        nested = db.query("SELECT s.value FROM ops o JOIN strings s ON s.id = o.name_id WHERE o.parent_id = ?", op_id)
        assert [n for (n,) in nested if not n.startswith("magneton::")] == ["tf::ReadVariableOp"]


def test_tf_function_call_is_one_op(small):
    db = small
    (op_id, *_), = db.ops("tf::function:twice")
    assert shapes(db, op_id, 0) == ["3,3"] and shapes(db, op_id, 1) == ["3,3"]
    # count_nonzero on booleans (TF >= 2.14): cast and sum, no comparison.
    assert db.count("tf::NotEqual") == 0


def children(db, op_id):
    """(name, args, start, end, thread) of the ops nested in op_id, by start."""
    rows = db.query("SELECT s.value, o.args, o.start_ns, o.end_ns, o.thread_id, o.id FROM ops o "
                    "JOIN strings s ON s.id = o.name_id WHERE o.parent_id = ? ORDER BY o.start_ns, o.id", op_id)
    return [(n, json.loads(a) if a else {}, start, end, thread, i) for n, a, start, end, thread, i in rows
            if not n.startswith("magneton::")]


def span(db, op_id):
    return db.query("SELECT start_ns, end_ns, thread_id, state_id FROM ops WHERE id = ?", op_id)[0]


def test_tf_function_graph_nodes_nested_in_their_call(small):
    """TF's profiler saw each executed graph node: nested in its call's op,
    inside its span, with its node name and no tensors. With Grappler's
    remapper on, MatMul+BiasAdd+Relu ran as one fused node (named after the
    Relu it ends in); with it off, as three nodes."""
    db = small
    meta = dict(db.query("SELECT key, value FROM meta"))
    calls = [op_id for name in ("tf::function:dense", "tf::function:dense_unfused", "tf::function:twice",
                                "tf::function:dense_xla") for op_id, *_ in db.ops(name)]
    assert len(calls) == 6 and "tf.profile.off" not in meta, meta.get("tf.profile.off")
    assert int(meta["tf.profile.calls_linked"]) == 6 and meta["tf.profile.nodes_unlinked"] == "0"
    written = 0
    for op_id in calls:
        start, end, thread, _ = span(db, op_id)
        nodes = children(db, op_id)
        assert nodes, op_id
        for _, args, s, e, t, node_id in nodes:
            assert start <= s <= e <= end and t == thread
            assert args["tensors"] == "not recorded (graph node)" and args["graph"].startswith("__inference_")
            assert db.tensors(node_id, 0) == [] and db.tensors(node_id, 1) == []
        written += len(nodes)
    assert int(meta["tf.profile.nodes_without_tensors"]) == written
    for op_id, *_ in db.ops("tf::function:dense"):
        (name, args, *_), = children(db, op_id)
        assert name.endswith("FusedMatMul") and args["node"] == "Relu"  # _FusedMatMul; _MklNativeFusedMatMul with oneDNN
    for op_id, *_ in db.ops("tf::function:dense_unfused"):
        nodes = children(db, op_id)
        assert [args["node"] for _, args, *_ in nodes] == ["MatMul", "BiasAdd", "Relu"]
        assert nodes[0][0].endswith("MatMul") and [n for n, *_ in nodes[1:]] == ["tf::BiasAdd", "tf::Relu"]
    # jit_compile=True: one XLA executable, its thunks nested instead of graph nodes.
    (xla_call, *_), = db.ops("tf::function:dense_xla")
    thunks = children(db, xla_call)
    assert all(n.startswith("xla::") and args["hlo_module"] and args["hlo_op"] == n[5:] for n, args, *_ in thunks)
    assert any("MatMul" in n or "dot" in n for n, *_ in thunks), [n for n, *_ in thunks]
    # An eager op has no graph nodes in it.
    first_matmul = eager_ops(db, "tf::MatMul")[0][0]
    assert children(db, first_matmul) == []
    assert "tensorflow" in meta["engine"].split(",")


def test_tf_function_jit_compile_is_runtime_state(small):
    db = small

    def state(op_id):
        return dict(db.query("SELECT key, value FROM runtime_states WHERE state_id = ?", span(db, op_id)[3]))

    dense, unfused = db.ops("tf::function:dense")[0][0], db.ops("tf::function:dense_unfused")[0][0]
    assert state(dense)["tf.function.jit_compile"] == "None"  # tf.config.optimizer.jit decides
    assert state(unfused)["tf.function.jit_compile"] == "False"
    assert state(unfused)["tf.config.optimizer.jit"] == "autoclustering"
    assert state(db.ops("tf::function:dense_xla")[0][0])["tf.function.jit_compile"] == "True"
    # The graph's nodes ran under their call's state; eager ops carry no such key.
    assert {span(db, node_id)[3] for *_, node_id in children(db, unfused)} == {span(db, unfused)[3]}
    assert "tf.function.jit_compile" not in state(eager_ops(db, "tf::MatMul")[0][0])


def test_runtime_state_and_setters(small):
    db = small
    config = db.config()
    assert config["tf.config.threading.inter_op_parallelism_threads"] == "0"
    assert config["tf.config.optimizer.jit"] == "" and "keras.config.dtype_policy" in config
    (value, site), = db.query("SELECT value, site FROM state_setters WHERE key = ?", "tf.config.optimizer.set_jit")
    assert value == "True" and site.split(":")[1] == str(line_of(SCRIPT, "set_jit"))

    def state(op_id):
        (state_id,), = db.query("SELECT state_id FROM ops WHERE id = ?", op_id)[0:1]
        return dict(db.query("SELECT key, value FROM runtime_states WHERE state_id = ?", state_id))

    first = eager_ops(db, "tf::MatMul")[0][0]
    after = db.ops("tf::function:twice")[0][0]
    assert state(first)["tf.config.optimizer.jit"] == ""
    assert state(after)["tf.config.optimizer.jit"] == "autoclustering"
    assert state(after)["keras.config.dtype_policy"] == "float32"
    recorders = json.loads(dict(db.query("SELECT key, value FROM meta"))["recorders"])
    assert any(r["name"] == "tensorflow" and r["available"] for r in recorders)


def test_keras_mlp_matches_torch_layer_by_layer(tmp_path):
    """tf_scripts/keras_torch_mlp: the same weights in Keras and torch; every Dense
    pairs with its nn.Linear and every ReLU with its ReLU by value."""
    require("torch")
    case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_scripts", "keras_torch_mlp")
    a = record(tmp_path, os.path.join(case, "a.py"), "--values")
    b = record(tmp_path, os.path.join(case, "b.py"), "--values")
    r = run_cli("match", "--json", a, b)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    pairs = set()
    for region in doc["regions"]:
        a_scopes = {op["scope"] for op in region["ops_a"] if op["name"] in ("tf::BiasAdd", "tf::Relu")}
        b_scopes = {op["scope"] for op in region["ops_b"] if op["name"] in ("aten::linear", "aten::relu")}
        if len(a_scopes) == 1 and len(b_scopes) == 1:
            kind = "dense" if any(op["name"] == "tf::BiasAdd" for op in region["ops_a"]) else "relu"
            pairs.add((kind, a_scopes.pop(), b_scopes.pop()))
    expected = {("dense", "sequential/fc0", "Sequential/0"), ("relu", "sequential/fc0", "Sequential/1"),
                     ("dense", "sequential/fc1", "Sequential/2"), ("relu", "sequential/fc1", "Sequential/3"),
                     ("dense", "sequential/fc2", "Sequential/4"), ("relu", "sequential/fc2", "Sequential/5"),
                     ("dense", "sequential/fc3", "Sequential/6")}
    assert pairs == expected, (sorted(pairs - expected), sorted(expected - pairs))


IN_PROCESS = textwrap.dedent("""\
    import os
    import sys
    import tensorflow as tf
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import execute
    import magneton

    before = (pywrap_tfe.TFE_Py_FastPathExecute, execute.execute, execute.quick_execute,
              tf.config.optimizer.set_jit)
    square = tf.function(lambda x: tf.matmul(x, x))
    os.environ["MAGNETON_TF_PROFILE"] = "0"  # the function is one op, its graph's nodes not recorded
    with magneton.record(sys.argv[1]):
        assert pywrap_tfe.TFE_Py_FastPathExecute is not before[0]
        tf.matmul(tf.ones((2, 2)), tf.ones((2, 2)))
        square(tf.ones((2, 2)))
    after = (pywrap_tfe.TFE_Py_FastPathExecute, execute.execute, execute.quick_execute,
             tf.config.optimizer.set_jit)
    assert after == before, (before, after)
    with magneton.record(sys.argv[2]):
        pass  # TensorFlow imported and hooked, no op of it run
    os.environ["MAGNETON_TF_PROFILE"] = "1"
    tf.profiler.experimental.start(sys.argv[4])  # the program's own profiler: the recorder's cannot start
    with magneton.record(sys.argv[3]):
        square(tf.ones((2, 2)))
    tf.profiler.experimental.stop()
    print("restored")
""")


def test_in_process_recording_restores_tensorflow(tmp_path):
    """magneton.record() in a program that imported TF first: hooks now, and
    every wrapped function is TF's own again after the block. With
    MAGNETON_TF_PROFILE=0 a tf.function call is one op with nothing nested
    (the module's fixture has the nodes), said in the meta, as when the
    program runs a TF profiler of its own; a recording in which TF ran no op
    does not name it as an engine (one that did does)."""
    script = tmp_path / "in_process.py"
    script.write_text(IN_PROCESS)
    trace, idle, busy = tmp_path / "in_process.mtrace", tmp_path / "idle.mtrace", tmp_path / "busy.mtrace"
    r = subprocess.run([sys.executable, str(script), str(trace), str(idle), str(busy), str(tmp_path / "own")],
                       capture_output=True, text=True, env=dict(os.environ, **ENV))
    assert r.returncode == 0 and "restored" in r.stdout, r.stderr[-3000:]
    db = TraceDB(str(trace))
    assert db.count("tf::MatMul") == 1
    (call, *_), = db.ops("tf::function:<lambda>")
    assert children(db, call) == []
    meta = dict(db.query("SELECT key, value FROM meta"))
    assert meta["tf.profile.off"] == "MAGNETON_TF_PROFILE=0" and "tensorflow" in meta["engine"].split(",")
    idle_meta = dict(TraceDB(str(idle)).query("SELECT key, value FROM meta"))
    assert "tensorflow" not in idle_meta.get("engine", "").split(",")
    busy_db = TraceDB(str(busy))
    (call, *_), = busy_db.ops("tf::function:<lambda>")
    assert children(busy_db, call) == []
    assert dict(busy_db.query("SELECT key, value FROM meta"))["tf.profile.off"].startswith("tf.profiler did not start")
