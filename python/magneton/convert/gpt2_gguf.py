"""Writes a Hugging Face GPT-2 (GPT2LMHeadModel) as a GGUF file that
llama.cpp's "gpt2" architecture loads, so that a Transformers run and a
llama.cpp run compute with the same weights and can be diffed.

Only float32 weights are written (no quantization). The tokenizer written
is a minimal byte-level BPE vocabulary of the model's vocab size: llama.cpp's
loader needs one, but callers feed token ids directly, so its contents never
decide a result.

    python -m magneton.convert.gpt2_gguf OUT.gguf --layers 2 --embd 64 --heads 2 --seed 0
"""

from __future__ import annotations

import argparse

import numpy as np

# llama.cpp's gpt2 tensor names for each Hugging Face parameter. Conv1D keeps
# its weight as [in, out]; ggml wants [out, in] rows (ne0 = in), so those
# are transposed.
_LAYER_TENSORS = {
    "ln_1.weight": ("attn_norm.weight", False),
    "ln_1.bias": ("attn_norm.bias", False),
    "attn.c_attn.weight": ("attn_qkv.weight", True),
    "attn.c_attn.bias": ("attn_qkv.bias", False),
    "attn.c_proj.weight": ("attn_output.weight", True),
    "attn.c_proj.bias": ("attn_output.bias", False),
    "ln_2.weight": ("ffn_norm.weight", False),
    "ln_2.bias": ("ffn_norm.bias", False),
    "mlp.c_fc.weight": ("ffn_up.weight", True),
    "mlp.c_fc.bias": ("ffn_up.bias", False),
    "mlp.c_proj.weight": ("ffn_down.weight", True),
    "mlp.c_proj.bias": ("ffn_down.bias", False),
}
_GLOBAL_TENSORS = {
    "transformer.wte.weight": "token_embd.weight",
    "transformer.wpe.weight": "position_embd.weight",
    "transformer.ln_f.weight": "output_norm.weight",
    "transformer.ln_f.bias": "output_norm.bias",
    "lm_head.weight": "output.weight",
}


def _byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for
    themselves, every other byte for a code point above 255, in byte order."""
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAC + 1)) | set(range(0xAE, 0xFF + 1))
    symbols, shifted = [], 0
    for b in range(256):
        if b in printable:
            symbols.append(chr(b))
        else:
            symbols.append(chr(256 + shifted))
            shifted += 1
    return symbols


def tokenizer_vocab(vocab_size: int) -> tuple[list[str], list[int], list[str]]:
    """Tokens, token types and merges of a byte-level vocabulary with exactly
    ``vocab_size`` entries; the last token is <|endoftext|> (BOS and EOS)."""
    import gguf

    if vocab_size < 259:
        raise ValueError(f"vocab_size {vocab_size} is too small for a byte-level vocabulary (>= 259)")
    space = _byte_symbols()[ord(" ")]
    tokens = _byte_symbols() + [space + "t"]
    merges = [f"{space} t"]
    tokens += [f"<|unused{i}|>" for i in range(vocab_size - len(tokens) - 1)] + ["<|endoftext|>"]
    types = [int(gguf.TokenType.NORMAL)] * (vocab_size - 1) + [int(gguf.TokenType.CONTROL)]
    return tokens, types, merges


def write_gguf(model, path: str) -> str:
    """Writes ``model`` (a transformers GPT2LMHeadModel) to ``path`` as GGUF."""
    import gguf

    cfg = model.config
    if cfg.model_type != "gpt2":
        raise ValueError(f"expected a GPT-2 model, got model_type={cfg.model_type!r}")
    n_inner = cfg.n_inner if cfg.n_inner is not None else 4 * cfg.n_embd
    state = {k: v.detach().to("cpu").float().numpy() for k, v in model.state_dict().items()}

    writer = gguf.GGUFWriter(path, "gpt2")
    writer.add_name("magneton-gpt2")
    writer.add_context_length(cfg.n_positions)
    writer.add_embedding_length(cfg.n_embd)
    writer.add_feed_forward_length(n_inner)
    writer.add_block_count(cfg.n_layer)
    writer.add_head_count(cfg.n_head)
    writer.add_layer_norm_eps(cfg.layer_norm_epsilon)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    tokens, types, merges = tokenizer_vocab(cfg.vocab_size)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(cfg.vocab_size - 1)
    writer.add_eos_token_id(cfg.vocab_size - 1)

    for hf_name, gguf_name in _GLOBAL_TENSORS.items():
        writer.add_tensor(gguf_name, np.ascontiguousarray(state[hf_name]))
    for layer in range(cfg.n_layer):
        for hf_suffix, (gguf_suffix, transpose) in _LAYER_TENSORS.items():
            array = state[f"transformer.h.{layer}.{hf_suffix}"]
            writer.add_tensor(f"blk.{layer}.{gguf_suffix}", np.ascontiguousarray(array.T if transpose else array))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_gpt2(layers: int = 2, embd: int = 64, heads: int = 2, positions: int = 64, vocab: int = 300,
              seed: int = 0):
    """A random-init GPT-2 from a config (never downloaded), in eval mode.
    GPT-2's init leaves biases at 0 and LayerNorm at (1, 0), which makes the
    bias adds and the norm's affine part identities; they are drawn at random
    too, so that every op changes the values it is given."""
    import torch
    import transformers

    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=embd, n_head=heads, n_positions=positions,
                                  vocab_size=vocab, bos_token_id=vocab - 1, eos_token_id=vocab - 1)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            elif ".ln_" in name:
                p.normal_(1.0, 0.1)
    return model


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--embd", type=int, default=64)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--positions", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    a = parser.parse_args(argv)
    write_gguf(tiny_gpt2(a.layers, a.embd, a.heads, a.positions, a.vocab, a.seed), a.out)
    print(a.out)


if __name__ == "__main__":
    main()
