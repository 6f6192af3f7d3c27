"""magneton.stop() while other Python threads run torch ops: the hook is
removed while callbacks are still running on those threads, and the recorder
they use must outlive them (Recorder::Ref in the C++ hook)."""
import threading

from conftest import TraceDB, require

torch = require("torch")
import magneton  # noqa: E402
from magneton import _analysis, _core  # noqa: E402

N_THREADS = 4
N_CYCLES = 12


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.tanh(self.fc(x))


def test_stop_while_four_threads_run_torch_ops(tmp_path):
    model = _Block()
    state = {"done": False, "cycle": -1}
    written = [-1] * N_THREADS  # per thread: last cycle with a whole forward inside its recording
    errors = []

    def work(w):
        try:
            x = torch.randn(4, 16)
            with torch.no_grad():
                while not state["done"]:
                    cycle = state["cycle"]
                    y = model(x)
                    y = torch.mm(y, y.t())
                    if cycle >= 0:
                        written[w] = cycle
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(N_THREADS)]
    for t in threads:
        t.start()
    paths = []
    try:
        for cycle in range(N_CYCLES):
            path = str(tmp_path / f"stop{cycle}.mtrace")
            paths.append(path)
            magneton.start(path, energy=False, values=cycle % 2 == 1)
            state["cycle"] = cycle
            # Stop once each thread has run a whole forward under this
            # recording; they keep going, so the stop lands inside their ops.
            while min(written) < cycle and not errors:
                threading.Event().wait(0.001)
            state["cycle"] = -1
            magneton.stop()
    finally:
        state["done"] = True
        for t in threads:
            t.join()
    assert not errors
    assert not _core.is_recording()

    for cycle, path in enumerate(paths):
        assert _analysis.validate(path) > 0  # the C++ reader accepts the file
        db = TraceDB(path)
        links = {}
        for op_id, role, slot in db.query("SELECT op_id, role, slot FROM op_tensors"):
            links.setdefault(op_id, []).append((role, slot))
        tanh = db.query("SELECT o.id, o.thread_id, o.end_ns >= o.start_ns FROM ops o JOIN strings s ON s.id = o.name_id "
                        "WHERE s.value = 'aten::tanh'")
        # Every thread's forward of this cycle is in its trace...
        assert len({tid for _, tid, _ in tanh}) == N_THREADS, f"cycle {cycle}"
        # ...and every tanh written is whole: its input, its output, an interval.
        for op_id, _, ordered in tanh:
            assert ordered
            assert sorted(links.get(op_id, [])) == [(0, 0), (1, 0)], f"cycle {cycle} op {op_id}"
        mm = db.query("SELECT o.id FROM ops o JOIN strings s ON s.id = o.name_id WHERE s.value = 'aten::mm'")
        for (op_id,) in mm:
            assert sorted(links.get(op_id, [])) == [(0, 0), (0, 1), (1, 0)], f"cycle {cycle} op {op_id}"
        scopes = {db.scope_path(s) for (s,) in db.query(
            "SELECT DISTINCT o.scope_id FROM ops o JOIN strings s ON s.id = o.name_id "
            "WHERE s.value = 'aten::linear' AND o.scope_id IS NOT NULL")}
        assert "_Block/fc" in scopes, f"cycle {cycle}: {scopes}"
