"""Runtime state per op on real torch (docs/TRACE_FORMAT.md, "Runtime state"
and "Environment"): settings changed while the script runs reach the ops
that ran under them, with the line that changed them; environment names that
native code reads are stored, secret-looking ones redacted."""

import sys
import textwrap
import uuid

import pytest

from conftest import TraceDB, require, run_cli

require("torch")


def _record(tmp_path, source, env=None):
    script = tmp_path / "state_script.py"
    script.write_text(textwrap.dedent(source))
    trace = str(tmp_path / "run.mtrace")
    r = run_cli("record", "-o", trace, "--", sys.executable, str(script), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return str(script), TraceDB(trace)


def _line_of(script, text):
    lines = open(script).read().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def _states(db, op_name):
    """The runtime state ({key: value}) of each top-level op named op_name (any overload), with its id."""
    out = []
    for (state_id,) in db.query("SELECT o.state_id FROM ops o JOIN strings s ON s.id = o.name_id "
                                "WHERE (s.value = ? OR s.value LIKE ? || '.%') AND o.parent_id IS NULL ORDER BY o.id",
                                op_name, op_name):
        values = dict(db.query("SELECT key, value FROM runtime_states WHERE state_id = ?", state_id))
        out.append((state_id, values))
    return out


def _setters(db, key):
    return db.query("SELECT value, site FROM state_setters WHERE key = ? ORDER BY t_ns", key)


@pytest.mark.parametrize("change", [True, False])
def test_set_num_threads_midway_gives_later_ops_another_state(tmp_path, change):
    script, db = _record(tmp_path, f"""
        import torch
        a, b = torch.randn(8), torch.randn(8)
        torch.set_num_threads(2)
        for _ in range(3):
            torch.add(a, b)
        {"torch.set_num_threads(1)  # CHANGE" if change else "pass  # CHANGE"}
        for _ in range(3):
            torch.mul(a, b)
    """)
    before, after = _states(db, "aten::add"), _states(db, "aten::mul")
    assert len(before) == 3 and len(after) == 3
    assert {s for s, _ in before} == {before[0][0]} and {s for s, _ in after} == {after[0][0]}
    assert before[0][1]["torch.num_threads"] == "2"
    set_at = _setters(db, "torch.num_threads")
    assert ("2", f"{script}:{_line_of(script, 'set_num_threads(2)')}:<module>") in set_at
    if change:
        assert after[0][0] != before[0][0]
        assert after[0][1]["torch.num_threads"] == "1"
        assert ("1", f"{script}:{_line_of(script, '# CHANGE')}:<module>") in set_at
    else:
        assert after[0][0] == before[0][0]
        assert [v for v, _ in set_at] == ["2"]


def test_no_grad_block_flips_grad_enabled_for_the_ops_inside(tmp_path):
    script, db = _record(tmp_path, """
        import torch
        x = torch.randn(4, requires_grad=True)
        torch.add(x, 1)
        with torch.no_grad():  # NO_GRAD
            torch.mul(x, 2)
        torch.sub(x, 1)
    """)
    (_, outside_before), = _states(db, "aten::add")
    (_, inside), = _states(db, "aten::mul")
    (_, outside_after), = _states(db, "aten::sub")
    assert outside_before["torch.grad_enabled"] == "true"
    assert inside["torch.grad_enabled"] == "false"
    assert outside_after["torch.grad_enabled"] == "true"
    # Nothing else changed between them.
    assert {k: v for k, v in inside.items() if k != "torch.grad_enabled"} == \
        {k: v for k, v in outside_before.items() if k != "torch.grad_enabled"}
    assert ("false", f"{script}:{_line_of(script, '# NO_GRAD')}:<module>") in _setters(db, "torch.grad_enabled")


def test_names_native_code_reads_are_recorded_and_secrets_redacted(tmp_path):
    tag = uuid.uuid4().hex[:8].upper()
    read, secret, unread, python_read = (f"ZZT{tag}_NATIVE_READ", f"ZZT{tag}_API_KEY", f"ZZT{tag}_NEVER_READ",
                                         f"ZZT{tag}_PY_READ")
    secret_value = "sk-" + uuid.uuid4().hex
    _, db = _record(tmp_path, f"""
        import ctypes
        import os
        import torch

        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        assert libc.getenv(b"{read}") == b"native-value"
        assert libc.getenv(b"{secret}") is not None
        assert os.environ.get("{python_read}") == "py-value"
        torch.add(torch.ones(2), 1)
    """, env={read: "native-value", secret: secret_value, unread: "x", python_read: "py-value"})
    config = db.config()
    assert config["env." + read] == "native-value"
    assert config["env." + secret] == "<redacted>"
    assert config["env." + python_read] == "py-value"
    assert "env." + unread not in config  # set, never read: not stored
    assert secret_value.encode() not in open(db.db.execute("PRAGMA database_list").fetchone()[2], "rb").read()
    meta = dict(db.query("SELECT key, value FROM meta"))
    assert "getenv interposer" in meta["env.names_from"]
    assert "stop" in meta["env.snapshots"] and "import:torch" in meta["env.snapshots"]


def test_jax_config_update_midway_gives_later_ops_another_state(tmp_path):
    require("jax")
    script, db = _record(tmp_path, """
        import jax
        import jax.numpy as jnp
        x = jnp.ones(4)
        jnp.add(x, 1.0)
        jax.config.update("jax_default_matmul_precision", "highest")  # UPDATE
        jnp.multiply(x, 2.0)
    """)
    (before_id, before), = [s for s in _states(db, "jax::jit(add)")][-1:]
    (after_id, after), = [s for s in _states(db, "jax::jit(multiply)")][-1:]
    assert before["jax.jax_default_matmul_precision"] == "None"
    assert after["jax.jax_default_matmul_precision"] == "highest"
    assert after_id != before_id
    assert ("highest", f"{script}:{_line_of(script, '# UPDATE')}:<module>") in \
        _setters(db, "jax.jax_default_matmul_precision")


# -- settings found by introspection (python/magneton/recorders/torch_state_introspect.py) --

_EINSUM = "torch.einsum('ij,jk,kl,lm->im', a, b, c, d)"


def test_opt_einsum_flag_reaches_the_einsums_under_it(tmp_path):
    """A flag the C++ hook does not read: a 4-operand einsum with opt_einsum off
    contracts left to right. Ops under the assignment and under flags(...) carry
    `false`, the ones outside `true`, each change at the program's line. (flags()
    first: an assignment shadows the value flags() sets, for einsum too.)"""
    script, db = _record(tmp_path, f"""
        import torch
        a, b, c, d = torch.randn(4, 50), torch.randn(50, 60), torch.randn(60, 70), torch.randn(70, 3)
        {_EINSUM}
        with torch.backends.opt_einsum.flags(enabled=False):  # FLAGS
            {_EINSUM}
        {_EINSUM}
        torch.backends.opt_einsum.enabled = False  # OFF
        {_EINSUM}
        torch.backends.opt_einsum.enabled = True  # ON
        {_EINSUM}
    """)
    values = [s["torch.backends.opt_einsum.enabled"] for _, s in _states(db, "aten::einsum")]
    assert values == ["true", "false", "true", "false", "true"]
    assert _states(db, "aten::einsum")[0][1]["torch.backends.opt_einsum.strategy"] == "auto"
    set_at = _setters(db, "torch.backends.opt_einsum.enabled")
    assert ("false", f"{script}:{_line_of(script, '# OFF')}:<module>") in set_at
    assert ("true", f"{script}:{_line_of(script, '# ON')}:<module>") in set_at
    assert ("false", f"{script}:{_line_of(script, '# FLAGS')}:<module>") in set_at


def test_a_flag_new_to_torch_is_captured_without_a_list(tmp_path):
    """A synthetic flag on a torch.backends module, as a later torch release
    would add one: found when the program first assigns it and on each change."""
    script, db = _record(tmp_path, """
        import torch
        x = torch.randn(8)
        torch.backends.cpu.magneton_test_flag = False  # ADD
        torch.add(x, 1)
        torch.backends.cpu.magneton_test_flag = True  # TOGGLE
        torch.mul(x, 2)
    """)
    (_, before), = _states(db, "aten::add")
    (_, after), = _states(db, "aten::mul")
    assert before["torch.backends.cpu.magneton_test_flag"] == "false"
    assert after["torch.backends.cpu.magneton_test_flag"] == "true"
    assert {k: v for k, v in after.items() if k != "torch.backends.cpu.magneton_test_flag"} == \
        {k: v for k, v in before.items() if k != "torch.backends.cpu.magneton_test_flag"}
    set_at = _setters(db, "torch.backends.cpu.magneton_test_flag")
    assert set_at == [("false", f"{script}:{_line_of(script, '# ADD')}:<module>"),
                      ("true", f"{script}:{_line_of(script, '# TOGGLE')}:<module>")]


def test_a_flag_present_before_recording_is_read_at_start(tmp_path):
    """A synthetic flag and a synthetic torch.get_X/set_X pair, there before the
    recording starts (found by the walk at install), changed inside; after the
    recording torch is as it was."""
    script = tmp_path / "inproc.py"
    trace = tmp_path / "inproc.mtrace"
    script.write_text(textwrap.dedent(f"""
        import types
        import torch
        import magneton
        torch.backends.mkldnn.magneton_test_level = 3
        knob = [1]  # a getter/setter pair a later torch might add
        torch.get_magneton_test_knob = lambda: knob[0]
        def set_knob(value):
            knob[0] = value
        torch.set_magneton_test_knob = set_knob
        original_setter = torch.set_flush_denormal
        x = torch.randn(8)
        with magneton.record({str(trace)!r}, energy=False):
            torch.add(x, 1)
            torch.backends.mkldnn.magneton_test_level = 5  # TOGGLE
            torch.set_magneton_test_knob(7)  # KNOB
            torch.mul(x, 2)
        assert torch.set_magneton_test_knob is set_knob
        assert type(torch.backends.cpu) is types.ModuleType, type(torch.backends.cpu)
        assert type(torch.backends.mkldnn).__name__ == "MkldnnModule" and \\
            "_magneton_watched" not in vars(type(torch.backends.mkldnn))
        assert torch.set_flush_denormal is original_setter
        assert "flags" not in vars(torch.backends.mkldnn)
    """))
    import subprocess
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    db = TraceDB(str(trace))
    (_, before), = _states(db, "aten::add")
    (_, after), = _states(db, "aten::mul")
    assert before["torch.backends.mkldnn.magneton_test_level"] == "3"
    assert after["torch.backends.mkldnn.magneton_test_level"] == "5"
    assert _setters(db, "torch.backends.mkldnn.magneton_test_level") == \
        [("5", f"{script}:{_line_of(str(script), '# TOGGLE')}:<module>")]
    assert (before["torch.magneton_test_knob"], after["torch.magneton_test_knob"]) == ("1", "7")
    assert _setters(db, "torch.magneton_test_knob") == [("7", f"{script}:{_line_of(str(script), '# KNOB')}:<module>")]


def test_torch_setters_and_backend_functions_are_watched_generically(tmp_path):
    """torch.set_X with a getter twin (anomaly mode), without one (flush
    denormal: known by its argument), a torch.backends function setter (the
    MHA fast path) and a nested settings object (cuda.matmul, read through its
    __getattr__): each reaches the ops after it, with its line. Keys the C++
    hook reads are not duplicated under another spelling."""
    script, db = _record(tmp_path, """
        import torch
        x = torch.randn(8)
        torch.add(x, 1)
        torch.set_anomaly_enabled(True)  # ANOMALY
        torch.set_flush_denormal(True)  # DENORMAL
        torch.backends.mha.set_fastpath_enabled(False)  # FASTPATH
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False  # BF16
        torch.mul(x, 2)
    """)
    (_, before), = _states(db, "aten::add")
    (_, after), = _states(db, "aten::mul")
    expected = {"torch.anomaly_enabled": ("false", "true", "# ANOMALY"),
                "torch.backends.mha.fastpath_enabled": ("true", "false", "# FASTPATH"),
                "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": ("true", "false", "# BF16")}
    for key, (old, new, marker) in expected.items():
        assert (before[key], after[key]) == (old, new), key
        assert (new, f"{script}:{_line_of(script, marker)}:<module>") in _setters(db, key), key
    assert "torch.flush_denormal" not in before  # no getter: unknown until set
    assert after["torch.flush_denormal"] == "true"
    assert ("true", f"{script}:{_line_of(script, '# DENORMAL')}:<module>") in _setters(db, "torch.flush_denormal")
    # The C++-read keys keep their names and are not read twice.
    assert before["torch.backends.mkldnn.enabled"] == "true" and "torch.num_threads" in before
    assert "torch.grad_enabled" in before and not any(k.startswith("torch.is_") for k in before)
    assert not any("autocast_" in k for k in before)
    assert "torch.backends.cpu.cpu_capability" in before and "torch.backends.quantized.engine" in before


def test_jax_flags_outside_the_jit_key_reach_later_ops(tmp_path):
    """jax_debug_infs (a check after every op, not part of JAX's trace context),
    set by jax.config.update and by its context manager: the ops after carry it."""
    require("jax")
    script, db = _record(tmp_path, """
        import jax
        import jax.numpy as jnp
        x = jnp.ones(4)
        jnp.add(x, 1.0)
        jax.config.update("jax_debug_infs", True)  # UPDATE
        jnp.multiply(x, 2.0)
        jax.config.update("jax_debug_infs", False)
        with jax.debug_nans(True):  # CONTEXT
            jnp.subtract(x, 3.0)
        jnp.divide(x, 4.0)
    """)
    (_, before), = _states(db, "jax::jit(add)")[-1:]  # jit mode: jnp.add is a jitted call
    (_, after), = _states(db, "jax::jit(multiply)")[-1:]
    (_, inside), = _states(db, "jax::jit(subtract)")[-1:]
    (_, outside), = _states(db, "jax::jit(true_divide)")[-1:]
    assert (before["jax.jax_debug_infs"], after["jax.jax_debug_infs"]) == ("False", "True")
    assert (inside["jax.jax_debug_nans"], outside["jax.jax_debug_nans"]) == ("True", "False")
    assert ("True", f"{script}:{_line_of(script, '# UPDATE')}:<module>") in _setters(db, "jax.jax_debug_infs")
    assert ("True", f"{script}:{_line_of(script, '# CONTEXT')}:<module>") in _setters(db, "jax.jax_debug_nans")


def test_ort_every_session_option_and_each_runs_options(tmp_path):
    """ONNX Runtime: every SessionOptions property (not a fixed list) is the
    state of the session's ops, and each run adds its own RunOptions: the ops
    of a run given a config entry carry it, those of a default run do not."""
    require("onnxruntime")
    require("onnx")
    _, db = _record(tmp_path, """
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "x"], ["m"], name="mm"),
                                   helper.make_node("Relu", ["m"], ["y"], name="relu")], "g", [x], [y])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        options = ort.SessionOptions()
        options.log_verbosity_level = 2
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feed = {"x": np.ones((4, 4), np.float32)}
        session.run(None, feed)
        run_options = ort.RunOptions()
        run_options.only_execute_path_to_fetches = True
        run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        session.run(None, feed, run_options)
    """)
    runs = _states(db, "onnx::MatMul")
    assert len(runs) == 2 and runs[0][0] != runs[1][0]
    (_, first), (_, second) = runs
    assert first["ort.log_verbosity_level"] == "2"  # not among the options once listed by hand
    assert first["ort.enable_profiling"] == "False"  # the program's value, not magneton's
    assert "ort.use_deterministic_compute" in first and "ort.execution_mode" in first
    assert first["ort.run.only_execute_path_to_fetches"] == "False"
    assert "ort.run.config.memory.enable_memory_arena_shrinkage" not in first
    assert second["ort.run.only_execute_path_to_fetches"] == "True"
    assert second["ort.run.config.memory.enable_memory_arena_shrinkage"] == "cpu:0"
    assert {k: v for k, v in first.items() if not k.startswith("ort.run.")} == \
        {k: v for k, v in second.items() if not k.startswith("ort.run.")}


def test_an_assignment_names_its_key_and_flags_works_as_a_decorator(tmp_path):
    """Assigning a C++-read flag adds a setter row for it (and none for the key
    that follows from it, whose new value the ops still carry); flags(...) as a
    decorator gives the decorated function's ops the value, each call afresh;
    flags(...) of a C++-read key gives it a row at the `with` line."""
    script, db = _record(tmp_path, f"""
        import torch
        a, b, c, d = torch.randn(4, 50), torch.randn(50, 60), torch.randn(60, 70), torch.randn(70, 3)
        x = torch.randn(8)

        @torch.backends.opt_einsum.flags(enabled=False)
        def contract():
            return {_EINSUM}

        torch.add(x, 1)
        torch.backends.cuda.matmul.allow_tf32 = True  # TF32
        torch.mul(x, 2)
        contract()
        {_EINSUM}
        contract()
        with torch.backends.mkldnn.flags(enabled=False):  # MKLDNN
            torch.sub(x, 1)
    """)
    (_, before), = _states(db, "aten::add")
    (_, after), = _states(db, "aten::mul")
    assert (before["torch.backends.cuda.matmul.allow_tf32"], after["torch.backends.cuda.matmul.allow_tf32"]) == \
        ("false", "true")
    assert before["torch.backends.cuda.matmul.fp32_precision"] != after["torch.backends.cuda.matmul.fp32_precision"]
    assert _setters(db, "torch.backends.cuda.matmul.allow_tf32") == \
        [("true", f"{script}:{_line_of(script, '# TF32')}:<module>")]
    assert _setters(db, "torch.backends.cuda.matmul.fp32_precision") == []
    einsums = _states(db, "aten::einsum")
    assert [s["torch.backends.opt_einsum.enabled"] for _, s in einsums] == ["false", "true", "false"]
    # flags() of a C++-read key: the key it changed gets a row at the `with` line.
    (_, inside), = _states(db, "aten::sub")
    assert inside["torch.backends.mkldnn.enabled"] == "false"
    assert _setters(db, "torch.backends.mkldnn.enabled") == \
        [("false", f"{script}:{_line_of(script, '# MKLDNN')}:<module>")]
