"""Recording a small CNN in plain torch.nn."""

from conftest import TraceDB, require

torch = require("torch")
nn = torch.nn

import magneton  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(x.flatten(1))


def test_cnn_ops_scopes_and_edges(tmp_path):
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        expected = net(x)
    path = str(tmp_path / "cnn.mtrace")
    with magneton.record(path):
        with torch.no_grad():
            got = net(x)
    assert torch.equal(expected, got)

    db = TraceDB(path)
    convs = db.ops("aten::conv2d")
    assert [db.scope_path(s) for _, s, *_ in convs] == ["Net/conv1", "Net/conv2"]
    relus = db.ops("aten::relu")
    assert len(relus) == 2
    assert db.count("aten::max_pool2d") == 2
    assert [db.scope_path(s) for _, s, *_ in db.ops("aten::linear")] == ["Net/fc"]

    # conv1 -> relu -> pool -> conv2: each output is the next op's input.
    conv1_out = db.tensors(convs[0][0], 1)[0]
    relu_in = db.tensors(relus[0][0], 0)[0]
    assert conv1_out == relu_in
    relu_out = db.tensors(relus[0][0], 1)[0]
    pool_ops = db.ops("aten::max_pool2d")
    assert db.tensors(pool_ops[0][0], 0)[0] == relu_out
    assert db.tensors(convs[1][0], 0)[0] == db.tensors(pool_ops[0][0], 1)[0]

    # Shapes, strides and dtype of the conv1 output as torch reports them.
    shape, strides, dtype = db.query("SELECT shape, strides, dtype FROM tensors WHERE id = ?", conv1_out)[0]
    assert shape == "2,8,16,16"
    assert strides == "2048,256,16,1"
    assert dtype == "float32"
    # The model input and weights were produced by no recorded op.
    x_id = db.tensors(convs[0][0], 0)[0]
    assert db.query("SELECT producer_op_id FROM tensors WHERE id = ?", x_id)[0][0] is None


def test_in_place_ops_make_a_new_value(tmp_path):
    path = str(tmp_path / "inplace.mtrace")
    x = torch.zeros(4)
    with magneton.record(path):
        y = x.add(1)      # y: new value
        y.mul_(2)         # in place: y's next version
        z = y.sum()       # reads the new version
    db = TraceDB(path)
    (add_id, *_), = db.ops("aten::add.Tensor") or db.ops("aten::add.Scalar")
    (mul_id, *_), = db.ops("aten::mul_.Tensor") or db.ops("aten::mul_.Scalar")
    (sum_id, *_), = db.ops("aten::sum")
    y0 = db.tensors(add_id, 1)[0]
    assert db.tensors(mul_id, 0)[0] == y0
    y1 = db.tensors(mul_id, 1)[0]
    assert y1 != y0
    assert db.tensors(sum_id, 0)[0] == y1
    assert float(z) == 8.0


def test_ops_from_several_threads(tmp_path):
    import threading

    path = str(tmp_path / "threads.mtrace")
    errors = []

    def work(n):
        try:
            a = torch.randn(16, 16)
            for _ in range(n):
                a = torch.tanh(a @ a)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    with magneton.record(path):
        threads = [threading.Thread(target=work, args=(50,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    db = TraceDB(path)
    tanh = db.ops("aten::tanh")
    assert len(tanh) == 200
    assert len({tid for *_, tid in tanh}) == 4
    nested = [(parent, tid) for _, _, _, parent, tid in db.ops("aten::mm") if parent is not None]
    assert len(nested) == 200  # each `a @ a` is an aten::matmul dispatching aten::mm
    for parent, tid in nested:
        assert db.query("SELECT thread_id FROM ops WHERE id = ?", parent)[0][0] == tid
