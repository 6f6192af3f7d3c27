"""Semantic matching (method.md section 5) on real recordings: `magneton match
--json` on tiny random-init models with identical weights on both sides."""

import json

import pytest

from conftest import require, run_cli

torch = require("torch")
transformers = require("transformers")

import magneton  # noqa: E402

ATTN_OPS = {"aten::matmul", "aten::softmax.int"}


def record(path, fn, *args):
    with magneton.record(str(path), values=True):
        with torch.no_grad():
            fn(*args)
    return str(path)


def match(a, b, *extra):
    r = run_cli("match", "--json", a, b, *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def names(ops):
    return [o["name"] for o in ops]


def scopes(ops):
    return [o["scope"] for o in ops]


def find_region(doc, name_a, name_b):
    """The region pairs holding op `name_a` on side A and `name_b` on side B."""
    return [r for r in doc["regions"] if name_a in names(r["ops_a"]) and name_b in names(r["ops_b"])]


# ---------------------------------------------------------------- GPT-2 eager vs sdpa

def gpt2(attn):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=128,
                                  bos_token_id=499, eos_token_id=499)
    cfg._attn_implementation = attn
    return transformers.GPT2LMHeadModel(cfg).eval()


def gpt2_ids(seed=1):
    return torch.randint(0, 500, (1, 12), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def gpt2_match(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpt2match")
    a = record(d / "eager.mtrace", gpt2("eager"), gpt2_ids())
    b = record(d / "sdpa.mtrace", gpt2("sdpa"), gpt2_ids())
    return match(a, b)


def test_gpt2_attention_regions_pair_up_per_layer(gpt2_match):
    attn = find_region(gpt2_match, "aten::softmax.int", "aten::scaled_dot_product_attention")
    assert len(attn) == 2, [names(r["ops_b"]) for r in gpt2_match["regions"]]
    for layer, region in enumerate(attn):
        a_ops = names(region["ops_a"])
        # Every differing eager op of the attention core sits inside the region.
        for op in ("aten::matmul", "aten::mul.Tensor", "aten::add.Tensor", "aten::softmax.int"):
            assert op in a_ops
        assert a_ops.count("aten::matmul") == 2
        assert names(region["ops_b"]).count("aten::scaled_dot_product_attention") == 1
        assert all(f"h.{layer}/attn" in s for s in scopes(region["ops_b"]))
        # It ends at the attention output on both sides: equivalent boundary tensors.
        assert region["outputs"] and region["outputs"][0]["a"]["shape"] == region["outputs"][0]["b"]["shape"]
    # And no differing op leaks into any other region.
    others = [r for r in gpt2_match["regions"] if r not in attn]
    assert not any(op in ATTN_OPS for r in others for op in names(r["ops_a"]))
    assert not any("aten::scaled_dot_product_attention" in names(r["ops_b"]) for r in others)


def test_gpt2_other_layers_pair_op_for_op(gpt2_match):
    attn = find_region(gpt2_match, "aten::softmax.int", "aten::scaled_dot_product_attention")
    same = [r for r in gpt2_match["regions"] if names(r["ops_a"]) == names(r["ops_b"])
            and scopes(r["ops_a"]) == scopes(r["ops_b"])]
    covered = {s for r in same for s in scopes(r["ops_a"])}
    for layer in range(2):
        for part in ("ln_1", "attn/c_attn", "attn/c_proj", "attn/resid_dropout", "ln_2", "mlp/c_fc", "mlp/act",
                     "mlp/c_proj"):
            assert f"GPT2LMHeadModel/transformer/h.{layer}/{part}" in covered, part
    for scope in ("GPT2LMHeadModel/transformer/wte", "GPT2LMHeadModel/transformer/wpe",
                  "GPT2LMHeadModel/transformer/ln_f", "GPT2LMHeadModel/lm_head"):
        assert scope in covered, scope
    # Regions are small: nothing but the attention cores spans many ops.
    for r in gpt2_match["regions"]:
        if r not in attn:
            assert len(r["ops_a"]) <= 6 and len(r["ops_b"]) <= 6, names(r["ops_a"])
    # The embedding starts at the model inputs.
    first = gpt2_match["regions"][0]
    assert first["starts_at_model_inputs"] and "aten::embedding" in names(first["ops_a"])


def test_gpt2_residual_adds_are_boundaries(gpt2_match):
    # Each layer's two residual adds end a region pair on both sides (cut points).
    ends = [r for r in gpt2_match["regions"]
            if r["ops_a"] and r["ops_a"][-1]["name"] == "aten::add.Tensor"
            and r["ops_b"][-1]["name"] == "aten::add.Tensor"
            and r["ops_a"][-1]["scope"].endswith(("h.0", "h.1")) and r["ops_b"][-1]["scope"] == r["ops_a"][-1]["scope"]]
    assert len(ends) == 4


# ---------------------------------------------------------------- layouts

class AttnHND(torch.nn.Module):
    """q/k/v as [B, H, N, D]."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.h, self.qkv, self.out = heads, torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)

    def core(self, q, k, v):
        s = torch.matmul(q, k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
        return torch.matmul(torch.softmax(s, dim=-1), v)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (t.reshape(b, n, self.h, c // self.h).permute(0, 2, 1, 3) for t in (q, k, v))
        o = self.core(q, k, v)                      # [B, H, N, D]
        return self.out(o.permute(0, 2, 1, 3).reshape(b, n, c))


class AttnNHD(AttnHND):
    """Same weights, q/k/v kept as [B, N, H, D]; einsum over the head axis."""

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (t.reshape(b, n, self.h, c // self.h) for t in (q, k, v))
        s = torch.einsum("bnhd,bmhd->bhnm", q, k) / (q.shape[-1] ** 0.5)
        o = torch.einsum("bhnm,bmhd->bnhd", torch.softmax(s, dim=-1), v)  # [B, N, H, D]
        return self.out(o.reshape(b, n, c))


class FusedQKV(torch.nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.qkv, self.dim = torch.nn.Linear(dim, 3 * dim), dim

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.dim, dim=-1)
        return torch.tanh(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)


class SplitQKV(torch.nn.Module):
    def __init__(self, fused):
        super().__init__()
        d = fused.dim
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        with torch.no_grad():
            for i, lin in enumerate((self.q, self.k, self.v)):
                lin.weight.copy_(fused.qkv.weight[i * d:(i + 1) * d])
                lin.bias.copy_(fused.qkv.bias[i * d:(i + 1) * d])

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        return torch.tanh(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)


class NormPermuted(torch.nn.Module):
    """Channels-first activations: permute to channels-last, normalise, permute back."""

    def __init__(self, c=32):
        super().__init__()
        self.pre, self.ln, self.post = torch.nn.Linear(16, 16), torch.nn.LayerNorm(c), torch.nn.Linear(16, 16)

    def forward(self, x):  # x: [B, C, L]
        y = self.pre(x)
        y = self.ln(y.permute(0, 2, 1).contiguous()).permute(0, 2, 1).contiguous()
        return torch.relu(self.post(y))


class NormDirect(NormPermuted):
    """Normalises over C directly with the same affine parameters."""

    def forward(self, x):
        y = self.pre(x)
        mu = y.mean(dim=1, keepdim=True)
        var = y.var(dim=1, unbiased=False, keepdim=True)
        y = (y - mu) / torch.sqrt(var + self.ln.eps) * self.ln.weight[None, :, None] + self.ln.bias[None, :, None]
        return torch.relu(self.post(y))


def _pair(tmp_path, ma, mb, x):
    return match(record(tmp_path / "a.mtrace", ma, x), record(tmp_path / "b.mtrace", mb, x))


def test_attention_hnd_vs_nhd(tmp_path):
    torch.manual_seed(0)
    a = AttnHND().eval()
    b = AttnNHD().eval()
    b.load_state_dict(a.state_dict())
    doc = _pair(tmp_path, a, b, torch.randn(2, 10, 64))
    core = find_region(doc, "aten::softmax.int", "aten::softmax.int")
    assert len(core) == 1
    assert "aten::einsum" in names(core[0]["ops_b"]) and "aten::matmul" in names(core[0]["ops_a"])
    # The projections around it pair up op for op.
    assert find_region(doc, "aten::linear", "aten::linear")
    assert all(names(r["ops_a"]) == names(r["ops_b"]) for r in find_region(doc, "aten::linear", "aten::linear"))


def test_fused_qkv_vs_three_projections(tmp_path):
    torch.manual_seed(0)
    a = FusedQKV().eval()
    b = SplitQKV(a).eval()
    doc = _pair(tmp_path, a, b, torch.randn(1, 12, 64))
    proj = find_region(doc, "aten::split.Tensor", "aten::linear")
    assert len(proj) == 1 or find_region(doc, "aten::linear", "aten::linear")
    region = (proj or find_region(doc, "aten::linear", "aten::linear"))[0]
    assert names(region["ops_b"]).count("aten::linear") == 3
    assert doc["regions"][-1]["ops_a"][-1]["name"] == "aten::tanh"
    assert names(doc["regions"][-1]["ops_a"]) == names(doc["regions"][-1]["ops_b"])


def test_permuted_layer_norm_vs_direct(tmp_path):
    torch.manual_seed(0)
    a = NormPermuted().eval()
    b = NormDirect().eval()
    b.load_state_dict(a.state_dict())
    doc = _pair(tmp_path, a, b, torch.randn(2, 32, 16))
    norm = find_region(doc, "aten::layer_norm", "aten::sqrt")
    assert len(norm) == 1
    assert "aten::permute" in names(norm[0]["ops_a"])
    assert any(n.startswith("aten::var") for n in names(norm[0]["ops_b"]))
    assert "aten::layer_norm" not in names(norm[0]["ops_b"])
    # Before and after: the linears and relu pair up.
    assert doc["regions"][0]["starts_at_model_inputs"]
    assert names(doc["regions"][-1]["ops_a"]) == names(doc["regions"][-1]["ops_b"])


# ---------------------------------------------------------------- negatives

def test_different_models_do_not_match(tmp_path):
    x = torch.randn(2, 10, 64, generator=torch.Generator().manual_seed(5))

    def attn(seed):
        torch.manual_seed(seed)
        return AttnHND().eval()

    def pair(name, a, b):
        (tmp_path / name).mkdir()
        return _pair(tmp_path / name, a, b, x)

    # The same procedure on the same weights matches the whole model: the
    # attention core and the projections around it, from the input on.
    same = pair("same", attn(0), attn(0))
    core = find_region(same, "aten::softmax.int", "aten::softmax.int")
    assert len(core) == 1, [names(r["ops_a"]) for r in same["regions"]]
    assert len(find_region(same, "aten::linear", "aten::linear")) >= 2  # qkv and out
    assert same["regions"][0]["starts_at_model_inputs"]
    assert same["unmatched_a"] == [] and same["unmatched_b"] == []
    # Other random weights: nothing computed from them agrees.
    assert pair("weights", attn(0), attn(1))["regions"] == []

    # Different architectures on the same input: nothing beyond the input
    # either, while the same function split differently (one fused qkv
    # projection against three) does match.
    hnd = attn(0)
    fused = FusedQKV().eval()  # its weights drawn after hnd's: no projection shares them
    split = SplitQKV(fused).eval()
    assert find_region(pair("split", fused, split), "aten::softmax.int", "aten::softmax.int")
    assert pair("arch", hnd, fused)["regions"] == []


# ---------------------------------------------------------------- several model inputs

class ReluNet(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        torch.manual_seed(0)
        self.l1, self.l2, self.act = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16), act

    def forward(self, x):
        return torch.tanh(self.l2(self.act(x)) + self.l1(x))


def test_region_matching_on_one_input_only_is_dropped(tmp_path):
    a, b = ReluNet(torch.relu).eval(), ReluNet(torch.abs).eval()
    positive = torch.rand(4, 16) + 0.1          # relu(x) == abs(x) here
    mixed = torch.randn(4, 16, generator=torch.Generator().manual_seed(3))  # ... but not here
    a1, b1 = record(tmp_path / "a1.mtrace", a, positive), record(tmp_path / "b1.mtrace", b, positive)
    a2, b2 = record(tmp_path / "a2.mtrace", a, mixed), record(tmp_path / "b2.mtrace", b, mixed)

    single = match(a1, b1)
    assert find_region(single, "aten::relu", "aten::abs"), "relu and abs agree on positive inputs"
    both = match(f"{a1},{a2}", f"{b1},{b2}")
    assert both["model_inputs"] == 2
    assert not find_region(both, "aten::relu", "aten::abs")
    assert "aten::relu" in names(both["unmatched_a"])


def test_mismatched_input_counts_are_rejected(tmp_path):
    a = record(tmp_path / "a.mtrace", ReluNet(torch.relu).eval(), torch.rand(2, 16))
    r = run_cli("match", f"{a},{a}", a)
    assert r.returncode != 0 and "same number" in r.stderr
