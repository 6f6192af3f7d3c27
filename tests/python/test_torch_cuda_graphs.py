"""CUDA graph captures and replays as recorder ops (python/magneton/recorders/torch_cuda_graphs.py;
docs/TRACE_FORMAT.md "CUDA graphs").

On this CPU-only torch the wrappers must be inert: nothing wrapped, no op of theirs in a
recording. Where torch has CUDA and a GPU, a captured tiny model replayed three times must come
back as one capture op, three replay ops and kernels linked to both (bench/gpu_check runs the
same check on the device machine)."""

import sys

import pytest

from conftest import TraceDB, require, run_cli

_RECORDED = """
import torch
replay = torch.cuda.CUDAGraph.replay
print("replay wrapped:", hasattr(replay, "__wrapped__"))
a = torch.randn(8, 8)
for _ in range(3):
    a = torch.tanh(a @ a)
"""

_CAPTURED = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64)).cuda()
x = torch.randn(16, 64, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):  # warm-up outside the capture, as torch.cuda.graph asks
        model(x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    y = model(x)
for _ in range(3):
    graph.replay()
torch.cuda.synchronize()
"""


def test_wrappers_are_inert_on_cpu_only_torch():
    torch = require("torch")
    if torch.version.cuda is not None and torch.cuda.is_available():
        pytest.skip("a CUDA build of torch with a GPU: the wrappers are meant to be active here")
    from magneton.recorders import torch_cuda_graphs

    reason = torch_cuda_graphs.why_inactive(torch)
    assert reason is not None
    before = {name: getattr(torch.cuda.CUDAGraph, name) for name in ("capture_begin", "capture_end", "replay")}
    assert torch_cuda_graphs.install(torch) is False
    after = {name: getattr(torch.cuda.CUDAGraph, name) for name in before}
    assert after == before
    torch_cuda_graphs.uninstall()  # nothing to undo: still the same
    assert {name: getattr(torch.cuda.CUDAGraph, name) for name in before} == before


def test_recording_on_cpu_only_torch_has_no_graph_ops(tmp_path):
    torch = require("torch")
    if torch.version.cuda is not None and torch.cuda.is_available():
        pytest.skip("a CUDA build of torch with a GPU: see test_captured_graph_replays_are_linked")
    script = tmp_path / "mm.py"
    script.write_text(_RECORDED)
    out = tmp_path / "mm.mtrace"
    r = run_cli("record", "-o", str(out), "--", sys.executable, str(script))
    assert r.returncode == 0, r.stderr
    assert "replay wrapped: False" in r.stdout, r.stdout
    db = TraceDB(out)
    # The positive twin: the program's own ops were recorded.
    names = db.op_names()
    assert sum(n.startswith("aten::tanh") for n in names) == 3
    assert not [n for n in names if n.startswith("magneton::cuda_graph")]
    assert db.query("SELECT count(*) FROM meta WHERE key LIKE 'gpu.graph.%'")[0][0] == 0


def test_captured_graph_replays_are_linked(tmp_path):
    torch = require("torch")
    if torch.version.cuda is None or not torch.cuda.is_available():
        pytest.skip("needs a CUDA build of torch and a visible GPU (a capture launches into a real CUDA graph)")
    script = tmp_path / "graph.py"
    script.write_text(_CAPTURED)
    out = tmp_path / "graph.mtrace"
    r = run_cli("record", "-o", str(out), "--", sys.executable, str(script))
    assert r.returncode == 0, r.stderr
    db = TraceDB(out)
    assert db.count("magneton::cuda_graph_capture") == 1
    assert db.count("cuda_graph::replay") == 3
    on_replay = db.query("""SELECT count(*) FROM device_activities d JOIN ops o ON o.id = d.op_id
                            JOIN strings s ON s.id = o.name_id WHERE s.value = 'cuda_graph::replay'""")[0][0]
    assert on_replay > 0, "the replays' kernels are charged to the replay ops"
    graph_kernels = db.query("SELECT count(*) FROM device_activities WHERE graph_node_id IS NOT NULL")[0][0]
    if graph_kernels:  # Kineto writes graph node ids only with CUPTI kernel records of version 5+
        captured = db.query("SELECT count(*) FROM device_activities WHERE captured_op_id IS NOT NULL")[0][0]
        meta = dict(db.query("SELECT key, value FROM meta WHERE key LIKE 'gpu.graph.%'"))
        assert captured > 0, meta
