"""torch.compile programs as they run (docs/ARCHITECTURE.md, "torch.compile"): Inductor kernels as ops with their
buffers, their provenance, the compile region apart from the first call, the compiled program's dataflow at top
level, and eager vs compiled paired by value. One compiled recording per module (plus two eager ones)."""

import json
import os
import sys
import textwrap

import pytest

from conftest import TraceDB, require, run_cli

SCRIPT = textwrap.dedent("""
    import sys
    import torch

    torch.manual_seed(int(sys.argv[1]))
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 8))
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1))
    f = torch.compile(model, dynamic=False) if sys.argv[2] == "compiled" else model


    def post(y):
        return torch.tanh(y) * 2


    if sys.argv[2] == "compiled":
        @torch.compile(fullgraph=True)  # DECORATOR LINE
        def post(y):
            return torch.tanh(y) * 2
    with torch.no_grad():
        for _ in range(3):
            y = f(x)  # CALL LINE
            y = post(y)
    print(float(y.sum()))
""")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require("torch")
    folder = tmp_path_factory.mktemp("compile")
    script = folder / "model.py"
    script.write_text(SCRIPT)
    out = {}
    # The FX graph cache off: Inductor compiles the graph here, so the kernels' provenance is known
    # (a cache hit brings back the code without it); its C++ build cache stays on (cheap reruns).
    env = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}
    for name, seed, mode in (("compiled", "0", "compiled"), ("eager", "0", "eager"), ("other", "7", "eager")):
        path = folder / f"{name}.mtrace"
        r = run_cli("record", "--values", "-o", str(path), "--", sys.executable, str(script), seed, mode,
                    cwd=str(folder), env=env)
        assert r.returncode == 0, r.stderr
        out[name] = path
    out["script"] = script
    return out


def _top_level(db):
    return db.query(
        "SELECT o.id, s.value, o.start_ns, o.end_ns, o.args, o.call_path_id FROM ops o JOIN strings s ON s.id = o.name_id "
        "WHERE o.parent_id IS NULL AND s.value NOT LIKE 'magneton::%' ORDER BY o.id")


def test_kernels_are_ops_with_the_buffers_they_read_and_write(runs):
    db = TraceDB(runs["compiled"])
    kernels = [r for r in _top_level(db) if r[1].startswith("inductor::cpp_fused")]
    assert len(kernels) >= 6, [r[1] for r in _top_level(db)]  # two fused kernels, three calls
    for op_id, name, *_ in kernels:
        assert db.tensors(op_id, 0), f"{name} has no input tensor"
        assert db.tensors(op_id, 1), f"{name} has no output tensor"
    # The kernel's output is the next extern addmm's input: the compiled program's dataflow.
    first = kernels[0][0]
    written = set(db.tensors(first, 1))
    readers = db.query("SELECT DISTINCT op_id FROM op_tensors WHERE role = 0 AND tensor_id IN (%s)"
                       % ",".join(map(str, written)))
    assert any(r[0] > first for r in readers)


def test_kernel_ops_carry_their_provenance_and_the_users_line(runs):
    db = TraceDB(runs["compiled"])
    kernels = [r for r in _top_level(db) if r[1].startswith("inductor::cpp_fused_tanh")]
    assert kernels
    args = json.loads(kernels[0][4])
    assert args["kernel"] == kernels[0][1].removeprefix("inductor::")
    assert "tanh" in args["aten"]
    assert args["source_nodes"]
    frames = db.call_path(kernels[0][5])
    script = str(runs["script"])
    user = [f for f in frames if f[0] == script]
    assert user, frames
    line = runs["script"].read_text().splitlines()[user[-1][1] - 1]
    assert "CALL LINE" in line


def test_compile_is_a_region_of_its_own_before_the_first_call(runs):
    db = TraceDB(runs["compiled"])
    top = _top_level(db)
    compiles = [r for r in top if r[1] == "torch.compile::compile"]
    assert len(compiles) == 2  # the model, then the decorated function
    _, _, start, end, args, path = compiles[0]
    args = json.loads(args)
    assert args["dynamic"] is False and args["backend"] in ("inductor", "None") and args["fullgraph"] is False
    assert args["compile_id"] == "0/0"
    # Each is the first compile of its function: paid once (diff ranks it apart, docs/DIFF.md).
    assert [json.loads(r[4]).get("compile_kind") for r in compiles] == ["first", "first"]
    # `@torch.compile(fullgraph=True)`: torch's decorator form compiles through its own name; its options and
    # its line still reach the compile region.
    deco = json.loads(compiles[1][4])
    assert deco["fullgraph"] is True and deco["dynamic"] == "None", deco
    deco_frames = [f for f in db.call_path(compiles[1][5]) if f[0] == str(runs["script"])]
    assert "DECORATOR LINE" in runs["script"].read_text().splitlines()[deco_frames[-1][1] - 1]
    # Not inside any op (the first call's), and the program's first kernel runs after it.
    for _, name, s, e, *_ in top:
        assert not (name != "torch.compile::compile" and s <= start and end <= e), name
    kernels = [r for r in top if r[1].startswith("inductor::")]
    assert kernels and min(r[2] for r in kernels) >= end
    # Its call path ends at the line that called torch.compile, where its options were chosen.
    frames = [f for f in db.call_path(path) if f[0] == str(runs["script"])]
    assert "torch.compile(" in runs["script"].read_text().splitlines()[frames[-1][1] - 1]
    # The options as config rows of kind call_arg: one row per argument name, the last call's value (the decorator's).
    assert db.config().get("call.torch.compile.fullgraph") == "True"


def test_the_compiled_programs_top_level_ops_have_tensors(runs):
    db = TraceDB(runs["compiled"])
    top = _top_level(db)
    with_tensors = [r for r in top if db.tensors(r[0], 0) or db.tensors(r[0], 1)]
    assert len(with_tensors) >= 0.95 * len(top), [r[1] for r in top if r not in with_tensors]
    assert not any(r[1].startswith(("Torch-Compiled Region", "TorchDynamo")) for r in top)


def _kernel_regions(a, b):
    r = run_cli("match", str(a), str(b), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    out = []
    for region in report["regions"]:
        names_a = [op["name"] for op in region["ops_a"]]
        names_b = [op["name"] for op in region["ops_b"]]
        if any(n.startswith("inductor::cpp_fused") for n in names_b):
            out.append((names_a, names_b))
    return out


def test_eager_and_compiled_pair_by_value_and_other_weights_do_not(runs):
    paired = _kernel_regions(runs["eager"], runs["compiled"])
    assert any("aten::tanh" in a and any(n.startswith("inductor::cpp_fused_tanh") for n in b) for a, b in paired), paired
    assert any("aten::gelu" in a for a, _ in paired), paired
    # Negative twin: the same program with other weights computes other values, so no kernel pairs.
    assert _kernel_regions(runs["other"], runs["compiled"]) == []
