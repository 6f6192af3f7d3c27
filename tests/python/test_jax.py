"""The JAX recorder (python/magneton/recorders/jax_recorder.py): unmodified JAX
scripts under `magneton record`, primitives with shapes, dataflow and user call
paths; and a JAX-vs-PyTorch pair matched by value (`magneton match --json`)."""

import json
import sys
import textwrap

import pytest

from conftest import TraceDB, require, run_cli

jax = require("jax")

# These tests are about eager mode (docs/JAX.md); jit mode has tests/python/test_jax_jit.py.
ENV = {"OMP_NUM_THREADS": "1", "MAGNETON_ENERGY": "0", "MAGNETON_JAX_MODE": "eager"}

SMALL = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    from jax import lax


    @jax.jit
    def layer(w, x):
        with jax.named_scope("dense"):
            h = jnp.tanh(x @ w)
        return h.sum(axis=-1)


    def cumulative(x):
        return lax.scan(lambda c, v: (c * 2.0 + v, c), jnp.float32(1.0), x)


    w = jnp.full((4, 3), 0.5, jnp.float32)
    x = jnp.arange(8, dtype=jnp.float32).reshape(2, 4)
    y = layer(w, x)
    carry, _ = jax.jit(cumulative)(jnp.ones(3, jnp.float32))
    noise = jax.random.normal(jax.random.PRNGKey(0), (3,))
    print(float(y.sum()) + float(carry) + float(noise.sum()))
""")


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def record(tmp_path, name, source, *extra):
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    trace = tmp_path / f"{name}.mtrace"
    r = run_cli("record", *extra, "-o", str(trace), "--", sys.executable, str(script), env=ENV)
    assert r.returncode == 0, r.stderr
    return str(script), str(trace)


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    return record(tmp_path_factory.mktemp("jax"), "small", SMALL, "--values")


def shapes(db, op_id, role):
    return [db.query("SELECT shape FROM tensors WHERE id = ?", t)[0][0] for t in db.tensors(op_id, role)]


def test_primitives_with_shapes_and_dataflow(small_trace):
    _, trace = small_trace
    db = TraceDB(trace)
    (dot, *_), = db.ops("jax::dot_general")
    assert shapes(db, dot, 0) == ["2,4", "4,3"]
    assert shapes(db, dot, 1) == ["2,3"]
    (tanh, *_), = db.ops("jax::tanh")
    assert db.tensors(tanh, 0) == db.tensors(dot, 1)  # the edge dot_general -> tanh
    sums = [op for op, *_ in db.ops("jax::reduce_sum") if db.tensors(op, 0) == db.tensors(tanh, 1)]
    assert len(sums) == 1 and shapes(db, sums[0], 1) == ["2"]
    # The scan body ran once per element, each step reading the previous carry.
    adds = [op for op, *_ in db.ops("jax::add")]
    assert len(adds) >= 3
    # --values: every produced float value carries a fingerprint.
    assert db.query("SELECT count(*) FROM fingerprints WHERE tensor_id = ?", db.tensors(tanh, 1)[0])[0][0] == 1


def test_warm_up_runs_are_recorder_ops_before_the_op(small_trace):
    _, trace = small_trace
    db = TraceDB(trace)
    warmups = db.ops("magneton::jax_warmup")
    assert warmups, "the first run of each new primitive signature is recorded as a recorder op"
    for op_id, _, _, parent_id, _ in warmups:
        assert parent_id is None or parent_id < 0  # top level, never inside a primitive
        assert db.tensors(op_id, 0) == [] and db.tensors(op_id, 1) == []
    # The first dot_general's warm-up ends before the op starts.
    (dot, *_), = db.ops("jax::dot_general")
    (dot_start,), = db.query("SELECT start_ns FROM ops WHERE id = ?", dot)[0:1]
    before = [w for w, *_ in warmups if w < dot]
    assert before
    (warm_end,), = db.query("SELECT end_ns FROM ops WHERE id = ?", before[-1])[0:1]
    assert warm_end <= dot_start


def test_prng_keys_carry_dataflow_into_the_key_implementation(small_trace):
    # random_seed/split/bits are not ops of their own: their threefry
    # primitives are, reading key data that recorded ops produced.
    _, trace = small_trace
    db = TraceDB(trace)
    threefry = db.ops("jax::threefry2x32")
    assert threefry
    for op, *_ in threefry:
        for t in db.tensors(op, 0):
            assert db.query("SELECT producer_op_id FROM tensors WHERE id = ?", t)[0][0] is not None


def test_call_paths_keep_the_users_line_and_the_jax_api_it_called(small_trace):
    script, trace = small_trace
    db = TraceDB(trace)
    (dot, scope_id, path_id, *_), = db.ops("jax::dot_general")
    frames = db.call_path(path_id)
    user = [f for f in frames if "jax/_src" not in f[0]]
    assert user[-1] == (script, line_of(SMALL, "h = jnp.tanh(x @ w)"), "layer")
    assert user[0] == (script, line_of(SMALL, "y = layer(w, x)"), "<module>")
    # Below the user's line: the JAX API it called (x @ w -> lax dot_general),
    # never JAX's dispatch machinery or magneton.
    api = frames[frames.index(user[-1]) + 1:]
    assert api and all("jax/_src" in f for f, _, _ in api), api
    assert any(f.endswith("lax/lax.py") for f, _, _ in api), api
    dispatch = ("/core.py", "/pjit.py", "/interpreters/", "/api.py", "/dispatch.py")
    assert not any(d in f for f, _, _ in frames for d in dispatch), frames
    assert all("magneton" not in f for f, _, _ in frames)
    assert db.scope_path(scope_id) == "dense"
    (_, scope_id, path_id, *_), = db.ops("jax::iota")
    assert scope_id is None
    assert [f for f in db.call_path(path_id) if "jax/_src" not in f[0]][-1][1] == line_of(SMALL, "x = jnp.arange")


def test_meta_and_config_snapshot(small_trace):
    _, trace = small_trace
    db = TraceDB(trace)
    meta = dict(db.query("SELECT key, value FROM meta"))
    assert meta["engine"] == "jax"
    assert meta["version.jax"] == jax.__version__
    config = db.config()
    assert config["jax.config.jax_enable_x64"] == "False"
    assert config["jax.config.jax_disable_jit"] == "False"  # as the program had it, not as recording set it
    assert config["jax.default_backend"] == "cpu"
    assert "jax.config.jax_default_matmul_precision" in config


def test_in_process_recording_restores_jit(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGNETON_JAX_MODE", "eager")
    import jax.numpy as jnp
    from jax._src import core

    import magneton

    process = core.EvalTrace.process_primitive
    with magneton.record(str(tmp_path / "inproc.mtrace"), energy=False):
        y = jax.jit(lambda v: v * 3.0)(jnp.ones(5))
    assert core.EvalTrace.process_primitive is process
    assert not jax.config.jax_disable_jit
    assert float(y.sum()) == 15.0
    assert TraceDB(str(tmp_path / "inproc.mtrace")).count("jax::mul") == 1


# ---------------------------------------------------------------- JAX vs PyTorch

EXPM_INPUT = textwrap.dedent("""\
    import numpy as np
    x = (np.random.default_rng({seed}).standard_normal((3, 16, 16)) * 0.3 / 4).astype(np.float32)
""")
JAX_EXPM = EXPM_INPUT + textwrap.dedent("""\
    import jax, jax.numpy as jnp
    y = jax.scipy.linalg.expm(jnp.asarray(x))
    print(float(y[0, 0, 0]))
""")
TORCH_EXPM = EXPM_INPUT + textwrap.dedent("""\
    import torch
    y = torch.linalg.matrix_exp(torch.from_numpy(x))
    print(float(y[0, 0, 0]))
""")


def names(ops):
    return [o["name"] for o in ops]


@pytest.fixture(scope="module")
def expm_traces(tmp_path_factory):
    require("torch")
    d = tmp_path_factory.mktemp("expm")
    return {
        "jax": record(d, "jax_expm", JAX_EXPM.format(seed=0), "--values")[1],
        "torch": record(d, "torch_expm", TORCH_EXPM.format(seed=0), "--values")[1],
        "torch_other": record(d, "torch_expm_other", TORCH_EXPM.format(seed=1), "--values")[1],
    }


def match(a, b):
    r = run_cli("match", "--json", a, b)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_jax_expm_matches_torch_matrix_exp(expm_traces):
    doc = match(expm_traces["jax"], expm_traces["torch"])
    final = [r for r in doc["regions"] if "aten::linalg_matrix_exp" in names(r["ops_b"])]
    assert len(final) == 1, [(names(r["ops_a"])[-3:], names(r["ops_b"])) for r in doc["regions"]]
    region = final[0]
    # The final result pairs: JAX's expm against the ATen op, from the model
    # input (x on both sides) to the same 3x16x16 result.
    assert all(n.startswith("jax::") for n in names(region["ops_a"]))
    assert [o["a"]["shape"] for o in region["outputs"]] == [[3, 16, 16]]
    assert [o["b"]["shape"] for o in region["outputs"]] == [[3, 16, 16]]
    assert region["starts_at_model_inputs"]
    # The whole of JAX's expm (every Padé matmul, the LU solve, the squarings)
    # is in that one region: its constant arrays are not taken for data.
    db = TraceDB(expm_traces["jax"])
    region_ops = {o["id"] for o in region["ops_a"]}
    for name in ("jax::dot_general", "jax::lu"):
        ops = [op for op, *_ in db.ops(name)]
        assert ops and set(ops) <= region_ops, name


def test_different_inputs_do_not_match(expm_traces):
    def expm_regions(doc):
        return [r for r in doc["regions"] if "aten::linalg_matrix_exp" in names(r["ops_b"])]

    # Recorded the same way from the same input, the results pair up...
    assert len(expm_regions(match(expm_traces["jax"], expm_traces["torch"]))) == 1
    # ... from another input they do not.
    assert expm_regions(match(expm_traces["jax"], expm_traces["torch_other"])) == []
