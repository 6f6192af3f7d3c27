"""Replay of real recorded torch ops with regenerated inputs."""


from conftest import TraceDB, require, run_cli

torch = require("torch")

import magneton  # noqa: E402


def test_replay_recorded_ops_and_store_results(tmp_path):
    path = str(tmp_path / "ops.mtrace")
    lin = torch.nn.Linear(64, 32)
    emb = torch.nn.Embedding(100, 64)
    ids = torch.tensor([[1, 5, 7]])
    with magneton.record(path):
        with torch.no_grad():
            h = emb(ids)
            y = lin(h).transpose(1, 2).contiguous()
            torch.softmax(y, dim=-1)
    db = TraceDB(path)
    (addmm_id, *_), = db.ops("aten::addmm")
    (emb_id, *_), = db.ops("aten::embedding")
    (sm_id, *_), = db.ops("aten::_softmax")
    r = run_cli("replay", path, "--ops", f"{addmm_id},{emb_id},{sm_id}", "--min-round-s", "0.02", "--rounds", "3")
    assert r.returncode == 0, r.stderr
    assert "aten::addmm" in r.stdout and "aten::embedding" in r.stdout
    rows = db.query("SELECT op_id, signature, calls_per_round, rounds, duration_ns_mean, duration_ns_stddev, "
                    "error FROM op_replays ORDER BY op_id")
    assert [row[0] for row in rows] == sorted([addmm_id, emb_id, sm_id])
    table = {line[:60].rstrip(): line[60:].split() for line in r.stdout.splitlines()[1:] if line.strip()}
    for op_id, signature, calls, rounds, mean, sd, error in rows:
        assert error == "", (signature, error)
        assert calls >= 1 and rounds == 3
        assert mean > 0 and sd >= 0
        # The spread of the rounds is reported as measured (how large it is
        # depends on the machine's load: a benchmark's business, not a test's).
        count, us_per_call, spread_pct = table[signature[:57] + "..." if len(signature) > 60 else signature][:3]
        assert abs(float(us_per_call) - mean / 1000) <= 0.0005 + 1e-9 * mean, (signature, us_per_call, mean)
        assert abs(float(spread_pct) - 100 * sd / mean) <= 0.05 + 1e-9, (signature, spread_pct, sd, mean)
    addmm_sig = [s for o, s, *_ in rows if o == addmm_id][0]
    assert "float32[3x64]" in addmm_sig and "float32[64x32]" in addmm_sig


def test_replay_top_ranks_by_time_and_reports_unreplayable_ops(tmp_path):
    path = str(tmp_path / "top.mtrace")
    a = torch.randn(128, 128)
    # Each op's first call carries one-time costs (here tanh 173 us then ~25 us, mm 880 us then ~70 us; on CI one
    # tanh call took ~4 ms and outranked mm): warm both up so the ranking is of the recorded steady state.
    torch.tanh(a @ a)
    with magneton.record(path):
        for _ in range(5):
            a = torch.tanh(a @ a)
    r = run_cli("replay", path, "--top", "2", "--min-round-s", "0.02", "--rounds", "2", "--no-store")
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines()[1:] if l.strip()]
    assert len(lines) == 2
    assert lines[0].startswith("aten::mm") or lines[0].startswith("aten::matmul")
    assert TraceDB(path).query("SELECT count(*) FROM op_replays")[0][0] == 0  # --no-store


def test_replay_of_missing_trace_is_one_clear_line(tmp_path):
    r = run_cli("replay", str(tmp_path / "nope.mtrace"))
    assert r.returncode == 1
    assert r.stderr.strip().startswith("magneton: ") and "does not exist" in r.stderr


def test_replay_stores_device_method_and_the_online_figure(tmp_path):
    path = str(tmp_path / "host.mtrace")
    a = torch.randn(96, 96)
    with magneton.record(path):
        for _ in range(3):
            a = torch.tanh(a @ a)
    db = TraceDB(path)
    (mm_id, *_), *_ = db.ops("aten::mm")
    r = run_cli("replay", path, "--ops", str(mm_id), "--min-round-s", "0.02", "--rounds", "2")
    assert r.returncode == 0, r.stderr
    (device, method, online, error), = db.query("SELECT device, method, online_energy_uj, error FROM op_replays")
    assert error == "" and device == "cpu" and method == "loop"
    has_samples = db.query("SELECT count(*) FROM energy_samples")[0][0] > 0
    # The recording's attribution for the same op, in the replay's domains.
    assert (online is not None and online >= 0) == has_samples
    assert "online µJ" in r.stdout.splitlines()[0]


def test_an_op_recorded_on_a_gpu_takes_the_device_path(tmp_path):
    # A CPU recording whose tensors are moved to cuda:0 in the file: replay
    # selects the device path (inputs made on cuda:0, GPU meter domain), and
    # without a GPU says why it cannot run it instead of running it on the CPU.
    path = str(tmp_path / "gpu.mtrace")
    x = torch.randn(16, 16)
    with magneton.record(path):
        torch.relu(x)
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute("UPDATE layouts SET device = 'cuda:0'")  # every tensor's (the tensors view reads them)
    (relu_id, *_), *_ = TraceDB(path).ops("aten::relu")
    r = run_cli("replay", path, "--ops", str(relu_id), "--rounds", "1")
    assert r.returncode == 0, r.stderr
    (device, error, sig), = TraceDB(path).query("SELECT device, error, signature FROM op_replays")
    assert device == "cuda:0" and "@cuda:0" in sig
    if torch.cuda.is_available():
        assert error == ""
    else:
        assert "cannot create an input tensor" in error and "not replayed" in r.stdout
