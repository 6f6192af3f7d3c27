"""Device-side fingerprints (--values on tensors outside host memory), run on
CPU tensors through the same C++ code a GPU tensor takes
(src/torch_hook/device_values.cc): ATen reductions and a gather of the host
fingerprint's sample grid. They must agree with the host fingerprint of the
same values: counts, min/max, quantiles and the strong part exactly (the same
grid values), mean and variance to fp64 summation order
(docs/TRACE_FORMAT.md, "Device fingerprints")."""

import math
import sys

import pytest

from conftest import TraceDB, require, run_cli

torch = require("torch")

import magneton  # noqa: E402
from magneton.recorders import torch_values  # noqa: E402
from magneton.recorders.torch_recorder import _load_hook  # noqa: E402


@pytest.fixture
def hook():
    h = _load_hook()
    yield h
    h.set_device_fingerprints("auto")


def _views():
    """(name, tensor) pairs: shapes, strides, offsets and dtypes the device path must read like the host."""
    g = torch.Generator().manual_seed(5)
    base = torch.randn(64, 48, 40, generator=g) * 3 + 1
    big = torch.randn(300, 400, generator=g)
    yield "contiguous 3-d", base
    yield "permuted", base.permute(2, 0, 1)
    yield "transposed large (sampled grid)", big.t()
    yield "strided slice with offset", big[3::2, 5::3]
    yield "expanded (zero stride)", torch.randn(1, 30, generator=g).expand(50, 30)
    yield "narrow of a transposed view", base.transpose(0, 2)[1:7]
    yield "scalar", torch.tensor(2.5)
    yield "size-1 axes", torch.randn(1, 5, 1, generator=g)
    special = torch.randn(40, 50, generator=g)
    special[3, 4], special[10, 11], special[39, 49] = math.nan, math.inf, -math.inf
    yield "NaN and Inf", special
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        yield f"{dtype} transposed", big.to(dtype).t()
    yield "int64 slice", torch.randint(-1000, 1000, (90, 70), generator=g)[::3]
    yield "int32", torch.randint(-50, 50, (33, 17), generator=g, dtype=torch.int32)
    yield "int8 permuted", torch.randint(-100, 100, (8, 9, 10), generator=g, dtype=torch.int8).permute(1, 2, 0)
    yield "uint8", torch.randint(0, 255, (120, 130), generator=g, dtype=torch.uint8)
    yield "bool", torch.rand(70, 80, generator=g) > 0.3


@pytest.mark.parametrize("name,t", list(_views()), ids=[n for n, _ in _views()])
def test_device_path_agrees_with_host_path(hook, name, t):
    host = torch_values.decode(torch_values.fingerprint(t, "host"))
    device = torch_values.decode(torch_values.fingerprint(t, "device"))
    for key in ("element_count", "nan_count", "pos_inf_count", "neg_inf_count", "min", "max",
                "quantile_sample_size", "quantiles", "strong", "marginals", "spectra"):
        assert device[key] == host[key], (name, key, device[key], host[key])
    scale = max(1.0, math.sqrt(host["mean"] ** 2 + host["variance"]))
    assert device["mean"] == pytest.approx(host["mean"], rel=1e-12, abs=1e-12 * scale), name
    assert device["variance"] == pytest.approx(host["variance"], rel=1e-10, abs=1e-12 * scale ** 2), name
    assert device["skewness"] == pytest.approx(host["skewness"], abs=1e-8), name
    assert device["kurtosis"] == pytest.approx(host["kurtosis"], abs=1e-8), name
    equivalent, reason = torch_values.compare(torch_values.fingerprint(t, "host"),
                                              torch_values.fingerprint(t, "device"), 1e-9)
    assert equivalent, (name, reason)


def test_different_values_are_not_equivalent_through_the_device_path(hook):
    g = torch.Generator().manual_seed(9)
    a, b = torch.randn(300, 400, generator=g), torch.randn(300, 400, generator=g)
    equivalent, reason = torch_values.compare(torch_values.fingerprint(a, "host"),
                                              torch_values.fingerprint(b, "device"), 1e-2)
    assert not equivalent and reason
    # Its twin: the same values are.
    assert torch_values.compare(torch_values.fingerprint(a, "host"), torch_values.fingerprint(a, "device"), 1e-2)[0]


def test_the_device_path_reads_no_more_than_the_grid(hook):
    # 4096 x 2048 values: the sample grid (at most 8192) and 9 scalars per
    # block come back, never the tensor; the grid is the host's.
    t = torch.randn(4096, 2048)
    host = torch_values.decode(torch_values.fingerprint(t, "host"))
    device = torch_values.decode(torch_values.fingerprint(t, "device"))
    assert 0 < device["quantile_sample_size"] <= 8192
    assert device["quantiles"] == host["quantiles"]


def test_path_selection(hook):
    t = torch.randn(8, 8)
    assert torch_values.value_path(t) == "host"
    assert torch_values.value_path(torch.empty(8, 8, device="meta")) == "none"
    assert torch_values.value_path(torch.empty(0)) == "none"  # no data to read
    hook.set_device_fingerprints("all")
    assert torch_values.value_path(t) == "device"  # on the CPU: no side stream
    hook.set_device_fingerprints("off")
    assert torch_values.value_path(t) == "host"  # off concerns device tensors only
    with pytest.raises(ValueError, match="not one of auto, all, off"):
        hook.set_device_fingerprints("sometimes")


def test_a_cuda_tensor_takes_the_device_path_on_a_side_stream(hook):
    if not torch.cuda.is_available():
        pytest.skip("torch.cuda is not available: the CUDA path is checked by bench/gpu_check on a GPU")
    t = torch.randn(300, 400, device="cuda")
    assert torch_values.value_path(t) == "device (side stream)"
    host = torch_values.fingerprint(t.cpu(), "host")
    equivalent, reason = torch_values.compare(host, torch_values.fingerprint(t, "device"), 1e-9)
    assert equivalent, reason
    hook.set_device_fingerprints("off")
    assert torch_values.value_path(t) == "none"


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))


def _record(path, model, x):
    with magneton.record(path, values=True):
        with torch.no_grad():
            y = model(x)
            torch.softmax(y.t().contiguous(), dim=0).sum()


def test_a_recording_through_the_device_path_matches_the_host_recording(hook, tmp_path):
    model, x = _model(), torch.randn(8, 32)
    host_path, device_path = str(tmp_path / "host.mtrace"), str(tmp_path / "device.mtrace")
    _record(host_path, model, x)
    hook.set_device_fingerprints("all")
    _record(device_path, model, x)
    hook.set_device_fingerprints("auto")
    host_db, device_db = TraceDB(host_path), TraceDB(device_path)
    meta = dict(device_db.query("SELECT key, value FROM meta WHERE key LIKE 'recorder.device_fingerprint%'"))
    assert int(meta["recorder.device_fingerprints"]) > 0
    assert meta["recorder.device_fingerprint_errors"] == "0"
    host_meta = dict(host_db.query("SELECT key, value FROM meta WHERE key LIKE 'recorder.device_fingerprint%'"))
    assert host_meta["recorder.device_fingerprints"] == "0"
    # The same program: the same values, fingerprinted alike. (Host values are
    # copied on the traced thread and fingerprinted on the recorder's own
    # thread, whose work is top-level recorder ops there: left out.)
    def program_ops(db):
        return [r[0] for r in db.query(
            "SELECT s.value FROM ops o JOIN strings s ON s.id = o.name_id "
            "WHERE NOT (s.value = 'magneton::fingerprint' AND o.parent_id IS NULL) ORDER BY o.id")]
    assert program_ops(host_db) == program_ops(device_db)
    assert host_db.count("magneton::fingerprint") > len([n for n in program_ops(host_db) if n == "magneton::fingerprint"])
    host_fps = dict(host_db.query("SELECT tensor_id, data FROM fingerprints"))
    device_fps = dict(device_db.query("SELECT tensor_id, data FROM fingerprints"))
    assert host_fps.keys() == device_fps.keys() and host_fps
    for tensor_id, data in host_fps.items():
        equivalent, reason = torch_values.compare(data, device_fps[tensor_id], 1e-9)
        assert equivalent, (tensor_id, reason)
    # Fingerprinting stays the recorder's time: one recorder op per fingerprint computed.
    assert device_db.count("magneton::fingerprint") > 0


def test_device_fingerprints_wait_out_a_graph_capture(hook, tmp_path):
    model, x = _model(), torch.randn(8, 32)
    path = str(tmp_path / "capture.mtrace")
    hook.set_device_fingerprints("all")
    hook.note_graph_capture(True)
    try:
        _record(path, model, x)
    finally:
        hook.note_graph_capture(False)
    assert hook.graph_captures_in_progress() == 0
    db = TraceDB(path)
    meta = dict(db.query("SELECT key, value FROM meta WHERE key LIKE 'recorder.device_fingerprint%'"))
    assert int(meta["recorder.device_fingerprints_skipped"]) > 0
    assert meta["recorder.device_fingerprints"] == "0"
    assert db.query("SELECT count(*) FROM fingerprints")[0][0] == 0
    # The twin: once the capture ended, values are read again.
    path2 = str(tmp_path / "after.mtrace")
    _record(path2, model, x)
    assert TraceDB(path2).query("SELECT count(*) FROM fingerprints")[0][0] > 0


def test_the_capture_bracket_wraps_torch_cuda_graphs(hook):
    from magneton.recorders import torch_values as tv

    class FakeGraph:  # stands in for torch.cuda.CUDAGraph, which a CPU torch cannot make
        def capture_begin(self, *a, **k):
            assert hook.graph_captures_in_progress() == 1

        def capture_end(self):
            pass

    class FailingGraph(FakeGraph):
        def capture_begin(self, *a, **k):
            raise RuntimeError("capture refused")

    class Fake:
        class cuda:
            CUDAGraph = FakeGraph

    tv.install_graph_capture_bracket(Fake, hook)
    try:
        g = FakeGraph()
        g.capture_begin()
        assert hook.graph_captures_in_progress() == 1
        g.capture_end()
        assert hook.graph_captures_in_progress() == 0
    finally:
        tv.uninstall_graph_capture_bracket()
    Fake.cuda.CUDAGraph = FailingGraph
    tv.install_graph_capture_bracket(Fake, hook)
    try:
        with pytest.raises(RuntimeError, match="capture refused"):
            FailingGraph().capture_begin()
        assert hook.graph_captures_in_progress() == 0
    finally:
        tv.uninstall_graph_capture_bracket()
    assert FakeGraph.capture_begin.__name__ == "capture_begin" and not hasattr(FakeGraph.capture_begin, "__wrapped__")


def test_the_environment_variable_forces_the_device_path_in_a_recorded_child(tmp_path):
    script = tmp_path / "mlp.py"
    script.write_text("import torch\n"
                      "torch.manual_seed(0)\n"
                      "m = torch.nn.Linear(16, 8)\n"
                      "with torch.no_grad():\n"
                      "    m(torch.randn(4, 16)).relu().sum()\n")
    counts = {}
    for mode in ("all", "auto"):
        path = str(tmp_path / f"{mode}.mtrace")
        r = run_cli("record", "--values", "-o", path, "--", sys.executable, str(script),
                    env={"MAGNETON_DEVICE_FINGERPRINTS": mode})
        assert r.returncode == 0, r.stderr
        meta = dict(TraceDB(path).query("SELECT key, value FROM meta WHERE key LIKE 'recorder.device_fingerprint%'"))
        counts[mode] = int(meta["recorder.device_fingerprints"])
        assert meta["recorder.device_fingerprint_errors"] == "0"
    assert counts["all"] > 0 and counts["auto"] == 0  # auto: CPU tensors are read on the host
