"""The TensorFlow recorder (python/magneton/recorders/tf_recorder.py): an
unmodified TF 2.x / Keras script under `magneton record --values` (one
recording for the module: TF's import costs seconds), eager ops with their
tensors and values, Keras layer names as scopes, a tf.function call as one
op, fast-path fallbacks recorded once, runtime state and its setters; and the
Keras-vs-torch MLP (tf_scripts/keras_torch_mlp) matched layer by layer."""

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
    print(float(tf.reduce_sum(z)) + float(tf.reduce_sum(w)) + float(y[0, 0]) + int(n))
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


def shapes(db, op_id, role):
    return [db.query("SELECT shape FROM tensors WHERE id = ?", t)[0][0] for t in db.tensors(op_id, role)]


def test_eager_ops_with_tensors_values_and_call_paths(small):
    db = small
    matmuls = db.ops("tf::MatMul")
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
    scopes = {db.scope_path(scope_id) for _, scope_id, *_ in db.ops("tf::MatMul") if scope_id is not None}
    assert {"sequential/hidden", "sequential/out"} <= scopes
    relu_scopes = {db.scope_path(s) for _, s, *_ in db.ops("tf::Relu")}
    assert relu_scopes == {"sequential/hidden"}
    # A variable's creation runs in its own name scope ("sequential/hidden/kernel/"):
    # building the model, not its forward, so it is recorded without a scope (set-up).
    created = db.ops("tf::VarHandleOp")
    assert len(created) >= 4 and all(scope_id is None for _, scope_id, *_ in created)


def test_fast_path_fallback_is_one_op(small):
    """Keras' BiasAdd on a Keras variable: the C++ fast path gives up
    (_FallbackException) and the slow path runs the op; the op is recorded
    once, with the variable's read nested inside it."""
    db = small
    adds = db.ops("tf::BiasAdd")
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

    first = db.ops("tf::MatMul")[0][0]
    after = db.ops("tf::function:twice")[0][0]
    assert state(first)["tf.config.optimizer.jit"] == ""
    assert state(after)["tf.config.optimizer.jit"] == "autoclustering"
    assert state(after)["keras.config.dtype_policy"] == "float32"
    recorders = json.loads(dict(db.query("SELECT key, value FROM meta"))["recorders"])
    assert any(r["name"] == "tensorflow" and r["available"] for r in recorders)


def test_keras_mlp_matches_torch_layer_by_layer(tmp_path):
    """tf_scripts/keras_torch_mlp: the same weights in Keras and torch; every Dense
    pairs with its nn.Linear, every LayerNormalization with its nn.LayerNorm and
    every ReLU with its ReLU by value (the pairing cases/tf-vs-torch-layernorm is
    scored on). Keras 3 runs a LayerNormalization as separate TF ops, torch as one."""
    require("torch")
    case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_scripts", "keras_torch_mlp")
    a = record(tmp_path, os.path.join(case, "a.py"), "--values")
    b = record(tmp_path, os.path.join(case, "b.py"), "--values")
    r = run_cli("match", "--json", a, b)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    kinds_a = {"tf::BiasAdd": "dense", "tf::Rsqrt": "ln", "tf::Relu": "relu"}
    kinds_b = {"aten::linear": "dense", "aten::layer_norm": "ln", "aten::relu": "relu"}
    pairs = set()
    for region in doc["regions"]:
        a_kinds = {(kinds_a[op["name"]], op["scope"]) for op in region["ops_a"] if op["name"] in kinds_a}
        b_kinds = {(kinds_b[op["name"]], op["scope"]) for op in region["ops_b"] if op["name"] in kinds_b}
        if len(a_kinds) == 1 and len(b_kinds) == 1:
            (kind_a, scope_a), (kind_b, scope_b) = a_kinds.pop(), b_kinds.pop()
            pairs.add((kind_a, scope_a, kind_b, scope_b))
        if any(op["name"] == "aten::layer_norm" for op in region["ops_b"]):
            names_a = {op["name"] for op in region["ops_a"]}
            assert {"tf::Mean", "tf::SquaredDifference", "tf::Rsqrt"} <= names_a, names_a
    expected = set()
    for i in range(3):
        expected |= {("dense", f"sequential/fc{i}", "dense", f"Sequential/{3 * i}"),
                     ("ln", f"sequential/ln{i}", "ln", f"Sequential/{3 * i + 1}"),
                     ("relu", f"sequential/relu{i}", "relu", f"Sequential/{3 * i + 2}")}
    expected.add(("dense", "sequential/fc3", "dense", "Sequential/9"))
    assert pairs == expected, (sorted(pairs - expected), sorted(expected - pairs))


IN_PROCESS = textwrap.dedent("""\
    import sys
    import tensorflow as tf
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import execute
    import magneton

    before = (pywrap_tfe.TFE_Py_FastPathExecute, execute.execute, execute.quick_execute,
              tf.config.optimizer.set_jit)
    with magneton.record(sys.argv[1]):
        assert pywrap_tfe.TFE_Py_FastPathExecute is not before[0]
        tf.matmul(tf.ones((2, 2)), tf.ones((2, 2)))
    after = (pywrap_tfe.TFE_Py_FastPathExecute, execute.execute, execute.quick_execute,
             tf.config.optimizer.set_jit)
    assert after == before, (before, after)
    print("restored")
""")


def test_in_process_recording_restores_tensorflow(tmp_path):
    """magneton.record() in a program that imported TF first: hooks now, and
    every wrapped function is TF's own again after the block."""
    script = tmp_path / "in_process.py"
    script.write_text(IN_PROCESS)
    trace = tmp_path / "in_process.mtrace"
    r = subprocess.run([sys.executable, str(script), str(trace)], capture_output=True, text=True,
                       env=dict(os.environ, **ENV))
    assert r.returncode == 0 and "restored" in r.stdout, r.stderr[-3000:]
    assert TraceDB(str(trace)).count("tf::MatMul") == 1
