"""Op arguments are stored as JSON (docs/TRACE_FORMAT.md, "Op arguments"): tricky values recorded from real
torch ops read back exactly with a plain JSON reader, and `magneton replay` rebuilds those ops from them."""

import json

from conftest import TraceDB, require, run_cli

torch = require("torch")

import magneton  # noqa: E402

MSG = 'it\'s "quoted", with, commas \\ and [brackets]'


def _record_tricky_ops(path):
    x = torch.randn(2, 3, 4, 5)
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    idx = torch.tensor([0, 2])
    flag = torch.tensor(1.0)
    with magneton.record(path):
        torch._assert_async(flag, MSG)                             # a string with quotes, commas, backslash
        torch.einsum("ij,jk->ik", a, b)                            # a string with commas, a tensor list
        x.sum(dim=[-1, 1], keepdim=True, dtype=torch.float64)      # negative ints in a list, a bool, a dtype
        x.clone(memory_format=torch.channels_last)                 # a memory format
        torch.nn.functional.layer_norm(a, (4,), eps=1e-12)         # 1e-12, None for the absent weight and bias
        torch.full((2, 2), float("-inf"), dtype=torch.float32, layout=torch.strided, device="cpu")
        torch.add(a, a, alpha=-2)                                  # a negative Scalar
        torch.ops.aten.index.Tensor(a, [None, idx])                # None inside a list of tensors


def _args(db, name):
    rows = db.query("SELECT o.id, o.args FROM ops o JOIN strings s ON s.id = o.name_id WHERE s.value = ? "
                    "AND o.parent_id IS NULL ORDER BY o.id", name)
    assert rows, f"no top-level {name} recorded"
    op_id, text = rows[0]
    return op_id, json.loads(text)


def test_tricky_arguments_read_back_exactly_and_replay(tmp_path):
    path = str(tmp_path / "tricky.mtrace")
    _record_tricky_ops(path)
    db = TraceDB(path)
    expected = {
        "aten::_assert_async.msg": [{"t": 0}, MSG],
        "aten::einsum": ["ij,jk->ik", [{"t": 0}, {"t": 1}], None],
        "aten::sum.dim_IntList": [{"t": 0}, [-1, 1], True, {"dtype": "float64"}],
        "aten::clone": [{"t": 0}, {"memory_format": "channels_last"}],
        "aten::layer_norm": [{"t": 0}, [4], None, None, 1e-12, True],
        "aten::full": [[2, 2], {"float": "-inf"}, {"dtype": "float32"}, {"layout": "strided"}, {"device": "cpu"},
                       False],  # pin_memory, as torch's argument parser passes it
        "aten::add.Tensor": [{"t": 0}, {"t": 1}, -2],
        "aten::index.Tensor": [{"t": 0}, [None, {"t": 1}]],
    }
    op_ids = []
    for name, args in expected.items():
        op_id, recorded = _args(db, name)
        assert recorded == args, name
        op_ids.append(op_id)
    eps = _args(db, "aten::layer_norm")[1][4]
    assert isinstance(eps, float) and eps == 1e-12

    r = run_cli("replay", path, "--ops", ",".join(map(str, op_ids)), "--min-round-s", "0.01", "--rounds", "2")
    assert r.returncode == 0, r.stderr
    assert '"ij,jk->ik"' in r.stdout  # the signature shows the string as written
    rows = db.query("SELECT op_id, signature, error FROM op_replays ORDER BY op_id")
    assert [row[0] for row in rows] == sorted(op_ids)
    for op_id, signature, error in rows:
        if signature.startswith("aten::_assert_async"):
            # Read back exactly, and refused by replay: an assertion is not a kernel (src/replay/replay_policy.h).
            assert error.startswith("refused: aten::_assert_async.msg: "), error
            continue
        assert error == "", (signature, error)
    assert "1 op signature refused" in r.stdout, r.stdout
    signatures = " | ".join(row[1] for row in rows)
    assert "torch.float64" in signatures and "torch.channels_last" in signatures and "1e-12" in signatures


def test_replay_says_what_is_wrong_with_arguments_it_cannot_read(tmp_path):
    path = str(tmp_path / "bad.mtrace")
    a = torch.randn(3, 4)
    with magneton.record(path):
        torch.add(a, a, alpha=-2)
    import sqlite3
    with sqlite3.connect(path) as con:
        (op_id,) = con.execute("SELECT o.id FROM ops o JOIN strings s ON s.id = o.name_id "
                               "WHERE s.value = 'aten::add.Tensor'").fetchone()
        # Version-1 text as this op's arguments (the dictionary row its op_rows row names).
        (args_id,) = con.execute("SELECT coalesce(max(id), -1) + 1 FROM op_args").fetchone()
        con.execute("INSERT INTO op_args(id, args) VALUES(?, ?)", (args_id, "%,%,-2"))
        con.execute("UPDATE op_rows SET args_id = ? WHERE id = ?", (args_id, op_id))
    r = run_cli("replay", path, "--ops", str(op_id), "--min-round-s", "0.01", "--rounds", "1", "--no-store")
    assert r.returncode == 0, r.stderr
    assert "not replayed: op arguments are not JSON: '%,%,-2'" in r.stdout
