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
    print("disable_jit", jax.config.jax_disable_jit, float(y.sum()) + float(n))
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
