"""JAX jit mode, the default (python/magneton/recorders/jax_jit_recorder.py,
src/record/xla_profile.cc): jit stays on; each jitted call is an op with its
arrays; XLA:CPU's thunks from jax.profiler are ops nested in it, with the
HLO metadata's primitives and source line; compilation is an op of its own;
MAGNETON_JAX_MODE=eager still records primitive by primitive. One recording
per mode, shared by the module."""

import json
import sys
import textwrap

import pytest

from conftest import TraceDB, require, run_cli

require("jax")

ENV = {"OMP_NUM_THREADS": "1", "MAGNETON_ENERGY": "0"}

PROGRAM = textwrap.dedent("""\
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit
    def layer(w, x):
        h = jnp.tanh(x @ w)  # LAYER
        return h.sum(axis=-1)


    w = jnp.full((4, 3), 0.5, jnp.float32)
    x = jnp.arange(8, dtype=jnp.float32).reshape(2, 4)
    for _ in range(3):
        y = layer(w, x)  # CALL
    n = jnp.linalg.norm(x)  # LIBRARY


    @functools.partial(jax.jit, static_argnums=0)
    def scale(k, v):
        return jnp.sin(v) * k  # SCALE


    for v in (x, w, x):  # two signatures, two executables; the first's again
        s = scale(2.0, v)
    print("disable_jit", jax.config.jax_disable_jit, float(y.sum()) + float(n), float(s.sum()))
""")


def line_of(needle):
    return next(i for i, line in enumerate(PROGRAM.splitlines(), 1) if needle in line)


def record(folder, name, *extra, env=None):
    script = folder / f"{name}.py"
    script.write_text(PROGRAM)
    trace = folder / f"{name}.mtrace"
    r = run_cli("record", *extra, "-o", str(trace), "--", sys.executable, str(script), env={**ENV, **(env or {})})
    assert r.returncode == 0, r.stderr
    return str(script), TraceDB(str(trace)), r.stdout


@pytest.fixture(scope="module")
def jit_run(tmp_path_factory):
    return record(tmp_path_factory.mktemp("jaxjit"), "jit", "--values")


def meta(db, key):
    rows = db.query("SELECT value FROM meta WHERE key = ?", key)
    return rows[0][0] if rows else None


def times(db, op_id):
    return db.query("SELECT start_ns, end_ns FROM ops WHERE id = ?", op_id)[0]


def shapes(db, op_id, role):
    return [db.query("SELECT shape FROM tensors WHERE id = ?", t)[0][0] for t in db.tensors(op_id, role)]


def test_jit_stays_on_and_each_call_is_an_op_with_its_arrays(jit_run):
    script, db, stdout = jit_run
    assert "disable_jit False" in stdout
    assert meta(db, "jax.mode") == "jit"
    calls = db.ops("jax::jit(layer)")
    assert len(calls) == 3
    for op, _, path, _, _ in calls:
        assert shapes(db, op, 0) == ["4,3", "2,4"]
        assert shapes(db, op, 1) == ["2"]
        assert db.call_path(path)[-1][:2] == (script, line_of("# CALL"))
        # --values: the executable's output is fingerprinted.
        (out,) = db.tensors(op, 1)
        assert db.query("SELECT count(*) FROM fingerprints WHERE tensor_id = ?", out)[0][0] == 1
    # Nothing ran primitive by primitive: the jitted body is one program.
    assert db.count("jax::dot_general") == 0 and db.count("jax::tanh") == 0


def test_xla_ops_with_times_and_source_lines_nest_in_each_call(jit_run):
    script, db, _ = jit_run
    calls = {op: times(db, op) for op, *_ in db.ops("jax::jit(layer)")}
    rows = db.query("SELECT o.id, s.value, o.parent_id, o.start_ns, o.end_ns, o.args, o.call_path_id FROM ops o "
                    "JOIN strings s ON s.id = o.name_id WHERE s.value LIKE 'xla::%'")
    nested = [r for r in rows if r[2] in calls]
    assert {r[2] for r in nested} == set(calls)  # every call has its thunks
    for _, name, parent, start, end, args, _ in nested:
        p_start, p_end = calls[parent]
        assert p_start <= start <= end <= p_end
        a = json.loads(args)
        assert a["hlo_module"] == "jit_layer" and name == "xla::" + a["hlo_op"]
    # The HLO metadata names the primitives and the user's line inside the
    # jitted function; that line is the op's innermost frame.
    at_layer = [r for r in nested if f"{script}:{line_of('# LAYER')}:layer" in json.loads(r[5]).get("sources", [])]
    assert at_layer
    prims = set().union(*(json.loads(r[5])["primitives"] for r in at_layer))
    assert prims & {"dot_general", "tanh"}
    assert db.call_path(at_layer[0][6])[-1] == (script, line_of("# LAYER"), "layer")
    assert int(meta(db, "xla.runs_linked")) >= 3


def test_each_call_is_timed_by_its_execution_on_a_lane_of_its_own(jit_run):
    """A call's op ends at its dispatch and takes its run's span from XLA's
    profile (xla_profile.cc RetimeHeld): it starts with its first thunk and
    ends with its last, on the dispatching thread's id negated, since the next
    call is dispatched on that thread while it runs."""
    _, db, _ = jit_run
    assert int(meta(db, "xla.calls_held")) >= 4  # layer x3, norm
    assert meta(db, "xla.calls_retimed") == meta(db, "xla.calls_held")
    calls = db.query("SELECT o.id, o.thread_id, o.start_ns, o.end_ns FROM ops o JOIN strings s ON s.id = o.name_id "
                     "WHERE s.value = 'jax::jit(layer)'")
    main_threads = {r[0] for r in db.query("SELECT DISTINCT o.thread_id FROM ops o JOIN strings s ON s.id = o.name_id "
                                           "WHERE s.value = 'jax::compile'")}
    spans = []
    for op, thread, start, end in calls:
        assert -thread in main_threads
        kids = db.query("SELECT min(start_ns), max(end_ns), count(*) FROM ops WHERE parent_id = ?", op)[0]
        assert kids[2] > 0 and (kids[0], kids[1]) == (start, end)
        spans.append((start, end))
    spans.sort()
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # one at a time on the lane


def test_compilation_is_its_own_op_before_the_first_call(jit_run):
    _, db, _ = jit_run
    compiles = [r for r in db.query("SELECT o.id, o.start_ns, o.end_ns, o.args, o.parent_id FROM ops o JOIN strings s "
                                    "ON s.id = o.name_id WHERE s.value = 'jax::compile'")
                if json.loads(r[3]).get("function") == "layer"]
    assert len(compiles) == 1  # one signature, compiled once
    _, _, c_end, args, parent = compiles[0]
    assert json.loads(args)["hlo_module"] == "jit_layer" and parent is None
    first_call = min(times(db, op)[0] for op, *_ in db.ops("jax::jit(layer)"))
    assert c_end <= first_call


def test_each_call_names_its_executable_on_both_paths(jit_run):
    """Every call op carries its executable's number, as its jax::compile op
    does (diff counts an executable's runs by it, docs/DIFF.md "One-time
    compilation"): calls through JAX's fast path (RecordedJit: layer, scale)
    and through pjit's Python path (norm, jitted at import). scale's second
    signature is a recompilation, and its third call (the first signature
    again, on the fast path) names the first executable."""
    _, db, _ = jit_run
    compiles = {}
    for (args,) in db.query("SELECT o.args FROM ops o JOIN strings s ON s.id = o.name_id "
                            "WHERE s.value = 'jax::compile'"):
        a = json.loads(args)
        compiles.setdefault(a["function"], []).append((a["executable"], a["compile_kind"]))
    assert len(compiles["layer"]) == 1 and compiles["layer"][0][1] == "first"
    assert [k for _, k in compiles["scale"]] == ["first", "recompile"]

    def executables(name):
        return [json.loads(db.query("SELECT args FROM ops WHERE id = ?", op)[0][0])["executable"]
                for op in sorted(op for op, *_ in db.ops(name))]

    assert executables("jax::jit(layer)") == [compiles["layer"][0][0]] * 3
    first, again = compiles["scale"][0][0], compiles["scale"][1][0]
    assert first != again and executables("jax::jit(scale)") == [first, again, first]
    (norm_exe,) = executables("jax::jit(norm)")
    assert (norm_exe, "first") in compiles["norm"]


def test_values_of_a_fast_path_call_with_a_static_argument(jit_run):
    """--values on a RecordedJit's call: its op's inputs are the call's
    leaves, the static 2.0 among them; the replayed jaxpr's argument is the
    op's second input, which the sin thunk reads."""
    _, db, _ = jit_run
    first = min(op for op, *_ in db.ops("jax::jit(scale)"))
    arg = db.tensors(first, 0)[-1]
    kids = [op for (op,) in db.query("SELECT id FROM ops WHERE parent_id = ? ORDER BY start_ns", first)]
    assert any(db.tensors(op, 1) for op in kids), kids
    assert any(arg in db.tensors(op, 0) for op in kids), [(db.tensors(op, 0), arg) for op in kids]


def test_a_jitted_library_function_names_itself_in_the_call_path(jit_run):
    """jnp.linalg.norm is jitted inside JAX: no Python frame of it runs, so the
    call's path gets the function's own frame (from its jaxpr's debug info)
    after the user's line; the diagnosis names the API from it
    (jax.numpy.linalg.norm). The program's own jitted function gets none."""
    script, db, _ = jit_run
    (op_id, _, path_id, *_), = db.ops("jax::jit(norm)")
    frames = db.call_path(path_id)
    assert frames[-2][0] == script and frames[-2][1] == line_of("# LIBRARY"), frames
    file, _, fn = frames[-1]
    assert file.endswith("jax/_src/numpy/linalg.py") and fn == "norm", frames
    for _, _, layer_path, *_ in db.ops("jax::jit(layer)"):
        assert db.call_path(layer_path)[-1][:2] == (script, line_of("# CALL"))


def test_eager_mode_when_asked(tmp_path):
    _, db, stdout = record(tmp_path, "eager", "--jax-mode", "eager")
    assert meta(db, "jax.mode") == "eager"
    assert db.count("jax::jit(layer)") == 0 and db.count("jax::compile") == 0
    assert db.count("jax::dot_general") == 3 and db.count("jax::tanh") == 3


def test_in_process_recording_restores_jax(tmp_path):
    """magneton.record() in a process that imported jax first: the dispatch
    hooks come off at stop, and the jitted call before the recording (whose
    fast path JAX had cached) is recorded inside it."""
    import jax
    import jax.numpy as jnp
    from jax._src import pjit

    import magneton

    f = jax.jit(lambda v: v * 3.0)
    f(jnp.ones(5))
    hooks = pjit._get_fastpath_data, pjit._pjit_call_impl_python, pjit._cpp_pjit
    with magneton.record(str(tmp_path / "inproc.mtrace"), energy=False):
        y = f(jnp.ones(5))

        # Made while recording: it keeps JAX's fast path (jax_jit_wrap.py).
        # Each call takes the one before's output (donated: gone after the
        # call, so read before it): that output is read before the call's op
        # begins, so the dataflow links them.
        def step(v):
            return v * 2.0 + 1.0

        g = jax.jit(step, donate_argnums=0)
        v = jnp.ones(5)
        for _ in range(3):
            v = g(v)
    assert (pjit._get_fastpath_data, pjit._pjit_call_impl_python, pjit._cpp_pjit) == hooks
    assert not jax.config.jax_disable_jit and float(y.sum()) == 15.0
    db = TraceDB(str(tmp_path / "inproc.mtrace"))
    assert db.count("jax::jit(<lambda>)") == 1
    steps = sorted(op for op, *_ in db.ops("jax::jit(step)"))
    assert len(steps) == 3
    for a, b in zip(steps, steps[1:]):
        assert db.tensors(a, 1) == db.tensors(b, 0)
    assert float(g(v).sum()) == 5 * 31.0  # after the recording: called straight through


def test_values_inside_the_first_call_from_a_replay(jit_run):
    """--values: the first call of each executable is replayed at stop on its
    arguments, equation by equation; each thunk of that call's run gets the
    fingerprinted value its HLO root computes, its operands linked to the
    call's arguments or to another thunk's value, the call's result to the
    last thunk. The replay is a recorder op after every call, outside them."""
    _, db, _ = jit_run
    calls = [op for op, *_ in db.ops("jax::jit(layer)")]
    first = calls[0]
    rows = db.query("SELECT o.id, s.value FROM ops o JOIN strings s ON s.id = o.name_id "
                    "WHERE s.value LIKE 'xla::%' AND o.parent_id = ? ORDER BY o.start_ns", first)
    with_values = [(op, name) for op, name in rows if db.tensors(op, 1)]
    assert len(with_values) >= 2, rows
    produced = set()
    for op, _ in with_values:
        for t in db.tensors(op, 1):
            assert db.query("SELECT count(*) FROM fingerprints WHERE tensor_id = ?", t)[0][0] == 1
            produced.add(t)
    # Dataflow inside the call: the first thunk reads the call's arguments,
    # a later one reads an earlier one's value, the last writes the result.
    args, (result,) = set(db.tensors(first, 0)), db.tensors(first, 1)
    assert set(db.tensors(with_values[0][0], 0)) <= args and db.tensors(with_values[0][0], 0)
    assert any(set(db.tensors(op, 0)) & (produced - {result}) for op, _ in with_values[1:])
    assert db.tensors(with_values[-1][0], 1) == [result]
    # Later calls of the same executable are not replayed.
    for later in calls[1:]:
        nested = db.query("SELECT o.id FROM ops o JOIN strings s ON s.id = o.name_id "
                          "WHERE s.value LIKE 'xla::%' AND o.parent_id = ?", later)
        assert nested and not any(db.tensors(op, 1) for (op,) in nested)
    (replay, *_), = db.ops("magneton::jax_values_replay")
    r_start, _ = times(db, replay)
    assert all(times(db, op)[1] <= r_start for op in calls)
    assert float(meta(db, "xla.values_replay_ms")) > 0 and int(meta(db, "xla.values_replay_calls")) >= 1
    assert meta(db, "xla.values_replay_failed") == "0"


MLP_INPUT = textwrap.dedent("""\
    import sys
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w1 = (rng.standard_normal((16, 32)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((32, 8)) * 0.3).astype(np.float32)
    if len(sys.argv) > 1:  # other weights
        w1, w2 = w1[::-1].copy(), w2 * -0.5
""")
JAX_MLP = MLP_INPUT + textwrap.dedent("""\
    import jax, jax.numpy as jnp

    @jax.jit
    def mlp(x, w1, w2):
        h = jnp.tanh(x @ w1)
        return jnp.tanh(h @ w2)

    print(float(mlp(jnp.asarray(x), jnp.asarray(w1), jnp.asarray(w2)).sum()))
""")
TORCH_MLP = MLP_INPUT + textwrap.dedent("""\
    import torch
    x, w1, w2 = map(torch.from_numpy, (x, w1, w2))
    h = torch.tanh(x @ w1)
    print(float(torch.tanh(h @ w2).sum()))
""")


@pytest.fixture(scope="module")
def mlp_traces(tmp_path_factory):
    require("torch")
    d = tmp_path_factory.mktemp("jitmlp")
    out = {}
    for name, text, args in (("jax", JAX_MLP, ()), ("torch", TORCH_MLP, ()), ("torch_other", TORCH_MLP, ("other",))):
        script = d / f"mlp_{name}.py"  # not jax.py: it would shadow the package
        script.write_text(text)
        trace = d / f"{name}.mtrace"
        r = run_cli("record", "--values", "-o", str(trace), "--", sys.executable, str(script), *args, env=ENV)
        assert r.returncode == 0, r.stderr
        out[name] = str(trace)
    return out


def match(a, b):
    r = run_cli("match", "--json", a, b)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_jitted_mlp_matches_torch_layer_by_layer(mlp_traces):
    """The replayed call's XLA ops are graph nodes with values: each matmul
    and tanh of the jitted MLP pairs with torch's, by value."""
    doc = match(mlp_traces["jax"], mlp_traces["torch"])
    pairs = [([o["name"] for o in r["ops_a"]], [o["name"] for o in r["ops_b"]], [o["a"]["shape"] for o in r["outputs"]])
             for r in doc["regions"]]
    layers = [(a[-1], b[-1], s) for a, b, s in pairs if a[-1].startswith("xla::")]
    assert [(b, s) for _, b, s in layers] == [("aten::matmul", [[8, 32]]), ("aten::tanh", [[8, 32]]),
                                              ("aten::matmul", [[8, 8]]), ("aten::tanh", [[8, 8]]),
                                              ("aten::sum", [[]])], pairs  # .sum() is jitted too


def test_jitted_mlp_does_not_match_other_weights(mlp_traces):
    doc = match(mlp_traces["jax"], mlp_traces["torch_other"])
    assert not [r for r in doc["regions"] if any(o["name"].startswith("xla::") for o in r["ops_a"])], doc["regions"]
