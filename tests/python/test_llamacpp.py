"""llama.cpp (llama-cpp-python) recorded into Magneton's trace model, and
matched and diffed against a Hugging Face Transformers run of the same
random-init GPT-2 weights (written to GGUF by magneton.convert.gpt2_gguf)."""

import json
import sys
import textwrap

import pytest

from conftest import TraceDB, require, run_cli

np = require("numpy")
torch = require("torch")
transformers = require("transformers")
gguf = pytest.importorskip("gguf", reason="gguf is not installed (pip install magneton[llamacpp])")
llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install magneton[llamacpp])")

from magneton.convert import gpt2_gguf  # noqa: E402

IDS = [17, 256, 3, 99, 140, 7, 42, 230, 5, 61, 12, 200]
N_EMBD, N_VOCAB = 64, 300

HF_SCRIPT = textwrap.dedent("""
    import sys, torch
    from magneton.convert import gpt2_gguf
    model = gpt2_gguf.tiny_gpt2(seed=int(sys.argv[1]))
    with torch.no_grad():
        model(torch.tensor([{ids}]))
""").format(ids=IDS)

# An unmodified llama-cpp-python program: nothing Magneton-specific in it.
LLAMA_SCRIPT = textwrap.dedent("""
    import sys, llama_cpp
    llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_batch=64, n_threads=1, logits_all=True,
                          verbose=False)
    llm.eval({ids})
""").format(ids=IDS)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("llamacpp")


@pytest.fixture(scope="module")
def gguf_path(workdir):
    return gpt2_gguf.write_gguf(gpt2_gguf.tiny_gpt2(seed=0), str(workdir / "gpt2.gguf"))


def hf_logits(seed):
    with torch.no_grad():
        return gpt2_gguf.tiny_gpt2(seed=seed)(torch.tensor([IDS])).logits[0].numpy()


def llama_logits(path):
    llm = llama_cpp.Llama(model_path=path, n_ctx=64, n_batch=64, n_threads=1, logits_all=True, verbose=False)
    llm.eval(IDS)
    return np.array(llm.scores[:len(IDS)])


def test_gguf_conversion_gives_the_hf_logits(gguf_path):
    ours = llama_logits(gguf_path)
    ref = hf_logits(seed=0)
    assert ours.shape == ref.shape == (len(IDS), N_VOCAB)
    scale = float(np.abs(ref).max())
    # ggml's GELU goes through an fp16 table and its KV cache is fp16: small, not zero.
    assert float(np.abs(ours - ref).max()) < 2e-3 * scale
    assert (ours.argmax(-1) == ref.argmax(-1)).all()
    # Other weights give other logits: the check can fail.
    assert float(np.abs(ours - hf_logits(seed=1)).max()) > 0.2 * scale


@pytest.fixture(scope="module")
def traces(workdir, gguf_path):
    (workdir / "hf.py").write_text(HF_SCRIPT)
    (workdir / "llama.py").write_text(LLAMA_SCRIPT)
    out = {}
    for name, argv in (("hf", ["hf.py", "0"]), ("llama", ["llama.py", gguf_path])):
        path = str(workdir / f"{name}.mtrace")
        r = run_cli("record", "--values", "-o", path, "--", sys.executable, str(workdir / argv[0]), *argv[1:])
        assert r.returncode == 0, r.stderr
        out[name] = path
    return out


def op_rows(db):
    """(id, name, scope path, args, start, end) of every op, in order."""
    rows = db.query("SELECT o.id, s.value, o.scope_id, o.args, o.start_ns, o.end_ns FROM ops o "
                    "JOIN strings s ON s.id = o.name_id ORDER BY o.id")
    return [(i, n, db.scope_path(sc) if sc is not None else "", a, s, e) for i, n, sc, a, s, e in rows]


def node_name(args):
    return args.split("name=", 1)[1].split(" src=", 1)[0]


def shape_of(db, tensor_id):
    return json.loads(db.query("SELECT shape FROM tensors WHERE id = ?", tensor_id)[0][0])


def test_recording_has_every_node_with_shapes_and_dataflow(traces):
    db = TraceDB(traces["llama"])
    meta = dict(db.query("SELECT key, value FROM meta"))
    assert meta["engine"] == "llama.cpp"
    assert meta["version.llama_cpp"] == llama_cpp.__version__
    config = db.config()
    assert config["llama.cpp.n_ctx"] == "64" and config["llama.cpp.n_threads"] == "1"
    assert "llama.cpp.type_k" in config and "llama.cpp.flash_attn_type" in config

    ops = op_rows(db)
    names = [n for _, n, *_ in ops]
    for op in ("ggml::GET_ROWS", "ggml::NORM", "ggml::MUL_MAT", "ggml::ADD", "ggml::GELU"):
        assert op in names, op
    # The op clock: every node has an interval, and nodes run one after another.
    for (_, _, _, _, s, e), (_, _, _, _, s2, _) in zip(ops, ops[1:]):
        assert 0 < s <= e <= s2

    by_name = {}
    for op_id, name, scope, args, *_ in ops:
        by_name.setdefault(node_name(args), []).append((op_id, name, scope))
    # The fused QKV projection of layer 1: [12, 64] activations x [192, 64] weight -> [12, 192].
    (qkv_id, qkv_op, qkv_scope), = [o for o in by_name["wqkv-1"] if o[1] == "ggml::MUL_MAT"]
    assert qkv_scope == "blk.1"
    inputs = db.tensors(qkv_id, "input")
    assert [shape_of(db, t) for t in inputs] == [[len(IDS), N_EMBD], [3 * N_EMBD, N_EMBD]]
    assert shape_of(db, db.tensors(qkv_id, "output")[0]) == [len(IDS), 3 * N_EMBD]
    # Dataflow: its activation is the output of layer 1's attention norm.
    norm_out = db.tensors(by_name["attn_norm-1"][-1][0], "output")[0]
    assert inputs[0] == norm_out
    # The LM head writes the logits.
    (head_id, _, head_scope), = by_name["result_output"]
    assert head_scope == "result_output"
    assert shape_of(db, db.tensors(head_id, "output")[0]) == [len(IDS), N_VOCAB]
    # Fingerprints exist for activations (record --values).
    assert db.query("SELECT count(*) FROM fingerprints")[0][0] > len(ops) // 2
