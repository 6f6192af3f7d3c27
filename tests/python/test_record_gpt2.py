"""Recording a real HF GPT-2 generate(): ops, module scopes, call paths,
dataflow, config snapshot, and bit-identical outputs."""

import os

import pytest

from conftest import TraceDB, require

torch = require("torch")
transformers = require("transformers")

import magneton  # noqa: E402

LAYERS, PROMPT, NEW = 2, 12, 5


def build_model(attn="sdpa"):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=LAYERS, n_embd=64, n_head=4, vocab_size=500, n_positions=128,
                                  bos_token_id=499, eos_token_id=499)
    cfg._attn_implementation = attn
    return transformers.GPT2LMHeadModel(cfg).eval()


def generate(model, ids, use_cache=True):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                              use_cache=use_cache, pad_token_id=0)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    model = build_model()
    ids = torch.randint(0, 500, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    reference = generate(model, ids)
    path = str(tmp_path_factory.mktemp("gpt2") / "gen.mtrace")
    with magneton.record(path, label="gpt2-test"):
        out = generate(model, ids)
    return path, reference, out, model, ids


def test_outputs_are_bit_identical(recorded):
    _, reference, out, model, ids = recorded
    assert torch.equal(reference, out)
    # And logits of a plain forward, bit for bit.
    with torch.no_grad():
        plain = model(ids).logits
    with magneton.record(os.path.join(os.path.dirname(recorded[0]), "fwd.mtrace")):
        with torch.no_grad():
            traced = model(ids).logits
    assert torch.equal(plain, traced)


def test_every_linear_of_every_decode_step_is_recorded(recorded):
    db = TraceDB(recorded[0])
    # GPT-2 blocks run four Conv1D projections (addmm) per layer per forward;
    # generate() runs one forward per new token.
    addmm = db.ops("aten::addmm")
    assert len(addmm) == 4 * LAYERS * NEW
    by_scope = {}
    for _, scope, *_ in addmm:
        by_scope.setdefault(db.scope_path(scope), 0)
        by_scope[db.scope_path(scope)] += 1
    for layer in range(LAYERS):
        for proj in ("attn/c_attn", "attn/c_proj", "mlp/c_fc", "mlp/c_proj"):
            assert by_scope[f"GPT2LMHeadModel/transformer/h.{layer}/{proj}"] == NEW
    # SDPA attention: one fused attention op per layer per step.
    assert db.count("aten::scaled_dot_product_attention") == LAYERS * NEW
    names = set(db.op_names())
    assert {"aten::embedding", "aten::layer_norm", "aten::linear"} <= names


def test_nested_ops_have_parents_on_the_same_thread(recorded):
    db = TraceDB(recorded[0])
    rows = db.query("SELECT c.id, c.thread_id, p.thread_id, c.start_ns, c.end_ns, p.start_ns, p.end_ns "
                    "FROM ops c JOIN ops p ON p.id = c.parent_id")
    assert len(rows) > 100
    for _, ct, pt, cs, ce, ps, pe in rows:
        assert ct == pt
        assert ps <= cs and ce <= pe
    # layer_norm dispatches native_layer_norm inside it.
    ln = db.ops("aten::native_layer_norm")
    parents = {db.query("SELECT s.value FROM ops o JOIN strings s ON s.id=o.name_id WHERE o.id=?", p)[0][0]
               for _, _, _, p, _ in ln}
    assert parents == {"aten::layer_norm"}


def test_dataflow_edges_follow_the_attention_block(recorded):
    db = TraceDB(recorded[0])
    # The fused QKV projection's output feeds an op in the same attention
    # module: an edge from producer to consumer through one tensor id.
    c_attn = [op for op in db.ops("aten::addmm")
              if db.scope_path(op[1]) == "GPT2LMHeadModel/transformer/h.0/attn/c_attn"]
    assert c_attn
    consumers_in_attn = 0
    for op_id, *_ in c_attn:
        (out,) = db.tensors(op_id, 1)
        # Produced by the addmm itself or by an op nested inside it.
        producer = db.query("SELECT producer_op_id FROM tensors WHERE id = ?", out)[0][0]
        chain = []
        while producer is not None:
            chain.append(producer)
            producer = db.query("SELECT parent_id FROM ops WHERE id = ?", producer)[0][0]
        assert op_id in chain
        consumers = db.query("SELECT op_id FROM op_tensors WHERE tensor_id = ? AND role = 0", out)
        for (c,) in consumers:
            scope = db.query("SELECT scope_id FROM ops WHERE id = ?", c)[0][0]
            if scope is not None and db.scope_path(scope).startswith("GPT2LMHeadModel/transformer/h.0/attn"):
                consumers_in_attn += 1
    assert consumers_in_attn >= len(c_attn)
    # Parameters are inputs that no recorded op produced.
    params = db.query("SELECT count(*) FROM tensors WHERE producer_op_id IS NULL")[0][0]
    assert params > 0


def test_call_paths_run_from_this_test_into_modeling_code(recorded):
    db = TraceDB(recorded[0])
    op_id, scope, path_id, parent, _ = db.ops("aten::scaled_dot_product_attention")[0]
    frames = db.call_path(path_id)
    files = [f for f, _, _ in frames]
    assert any(f.endswith("test_record_gpt2.py") for f in files)
    assert any("modeling_gpt2.py" in f or "sdpa_attention.py" in f for f in files[-3:])
    # magneton's own frames are not part of user call paths.
    assert not any("/magneton/" in f and "site-packages" in f for f in files)
    assert all(line > 0 for _, line, _ in frames)


def test_config_snapshot_holds_flags_model_config_and_call_args(recorded):
    cfg = TraceDB(recorded[0]).config()
    assert cfg["torch.get_num_threads"] == str(torch.get_num_threads())
    assert cfg["model_config.GPT2LMHeadModel.n_layer"] == str(LAYERS)
    assert cfg["model_config.GPT2LMHeadModel._attn_implementation"] == "sdpa"
    assert cfg["call.generate.use_cache"] == "True"
    assert cfg["call.generate.max_new_tokens"] == str(NEW)
    meta = dict(TraceDB(recorded[0]).query("SELECT key, value FROM meta"))
    assert meta["label"] == "gpt2-test"
    assert meta["version.torch"] == torch.__version__
    assert meta["version.transformers"] == transformers.__version__


def test_eager_attention_records_its_matmuls_and_softmax(tmp_path):
    model = build_model(attn="eager")
    ids = torch.randint(0, 500, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    path = str(tmp_path / "eager.mtrace")
    with magneton.record(path):
        generate(model, ids)
    db = TraceDB(path)
    assert db.count("aten::scaled_dot_product_attention") == 0
    softmax = [op for op in db.ops("aten::softmax.int") if "/attn" in db.scope_path(op[1])]
    assert len(softmax) == LAYERS * NEW
