#!/usr/bin/env python3
"""The generate workloads of bench/overhead and bench/real_size: HF models
built from a config with random weights (torch.manual_seed(0), fp32, eval;
never downloaded), a fixed random prompt, greedy generate with the KV cache.

  gpt2       GPT-2 small width (n_embd 768, 12 heads), 4 layers: bench/overhead's
             workload since the start (--layers N changes the depth)
  gpt2-124m  GPT-2 124M: the same config with its 12 layers
  llama-1b   a Llama-architecture model of ~1.1 B parameters (TinyLlama's shape:
             hidden 2048, 22 layers, 32 heads, 4 KV heads, intermediate 5632,
             vocab 32000); 4.4 GB of fp32 weights

Run as a program it is one generate of one model, the process bench/real_size
times and records (`magneton record -- python3 bench/real_models.py ...`): it
builds the model, generates once and prints one line, `real_models: {json}`,
with the parameter count, the build and generate times and a digest of the
generated tokens (every run of the same arguments must print the same digest).

  python3 bench/real_models.py --model llama-1b     # one native generate, timed
"""

import argparse
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# torch and transformers are imported where a model is built or run, not at import: bench/real_size
# imports this module only for MODELS and the arguments, and a parent holding torch (~200 MB) would
# count in every child's max RSS (Linux carries the high-water mark across exec, which wait4 reports).

# Per model: the default depth, prompt and new tokens. llama-1b's are sized so that one
# unrecorded generate takes about 10 s on the project's 2-core VM (2026-12-05, quiet: a
# 32-token prompt and 16 new tokens took 19.7 s to generate, 24.1 s to build; 4.7 GB max RSS).
MODELS = {
    "gpt2": {"layers": 4, "prompt": 128, "new_tokens": 64},
    "gpt2-124m": {"layers": 12, "prompt": 128, "new_tokens": 64},
    "llama-1b": {"layers": 22, "prompt": 32, "new_tokens": 8},
}


def config(name, layers=None, tiny=False):
    """The model's transformers config. tiny: a few-MB model of the same
    architecture, for smoke tests of the harness (not a measurement)."""
    layers = MODELS[name]["layers"] if layers is None else layers
    if name in ("gpt2", "gpt2-124m"):
        from transformers import GPT2Config
        if tiny:
            return GPT2Config(n_layer=layers, n_embd=64, n_head=4, vocab_size=1000, n_positions=1024,
                              bos_token_id=1, eos_token_id=2)
        return GPT2Config(n_layer=layers, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)
    if name == "llama-1b":
        from transformers import LlamaConfig
        if tiny:
            return LlamaConfig(hidden_size=64, num_hidden_layers=layers, num_attention_heads=4,
                               num_key_value_heads=2, intermediate_size=176, vocab_size=1000,
                               max_position_embeddings=2048, tie_word_embeddings=False)
        return LlamaConfig(hidden_size=2048, num_hidden_layers=layers, num_attention_heads=32,
                           num_key_value_heads=4, intermediate_size=5632, vocab_size=32000,
                           max_position_embeddings=2048, rms_norm_eps=1e-5, tie_word_embeddings=False)
    raise ValueError(f"unknown model {name!r}: one of {', '.join(MODELS)}")


def build(name, layers=None, tiny=False):
    """The model, random init from torch.manual_seed(0), fp32, eval()."""
    import torch
    cfg = config(name, layers, tiny)
    torch.manual_seed(0)
    if name == "llama-1b":
        from transformers import LlamaForCausalLM
        model = LlamaForCausalLM(cfg)
    else:
        from transformers import GPT2LMHeadModel
        model = GPT2LMHeadModel(cfg)
    return model.float().eval()


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def describe(name, model):
    """One line: the model's shape and parameter count."""
    cfg = model.config
    if name == "llama-1b":
        shape = (f"{cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads "
                 f"({cfg.num_key_value_heads} KV), intermediate {cfg.intermediate_size}, vocab {cfg.vocab_size}")
        family = "Llama"
    else:
        shape = f"{cfg.n_layer} layers, n_embd {cfg.n_embd}, {cfg.n_head} heads, vocab {cfg.vocab_size}"
        family = "GPT-2"
    return f"{family} ({name}, random init, fp32): {shape}; {parameter_count(model) / 1e6:.1f} M parameters"


def prompt_ids(model, length):
    """A fixed random prompt over the model's vocabulary (seed 1)."""
    import torch
    return torch.randint(0, model.config.vocab_size, (1, length), generator=torch.Generator().manual_seed(1))


def generate(model, ids, new_tokens):
    """Greedy, with the KV cache, exactly new_tokens tokens."""
    import torch
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                              use_cache=True, pad_token_id=0)


def add_model_arguments(ap):
    """--model, --layers, --prompt, --new-tokens (per-model defaults: None) and the hidden --tiny."""
    ap.add_argument("--model", choices=list(MODELS), default="gpt2",
                    help="gpt2 (4 layers, 768 wide; the default), gpt2-124m, llama-1b")
    ap.add_argument("--layers", type=int, default=None, help="depth (default: the model's own)")
    ap.add_argument("--prompt", type=int, default=None, help="prompt tokens (default: the model's)")
    ap.add_argument("--new-tokens", type=int, default=None, help="tokens to generate (default: the model's)")
    ap.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # smoke tests: a few-MB model


def resolve_defaults(args):
    """Fill the per-model defaults left as None by add_model_arguments."""
    defaults = MODELS[args.model]
    for key in ("layers", "prompt", "new_tokens"):
        if getattr(args, key) is None:
            setattr(args, key, defaults[key])
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(ap)
    args = resolve_defaults(ap.parse_args())
    import torch
    t0 = time.perf_counter()
    model = build(args.model, args.layers, args.tiny)
    ids = prompt_ids(model, args.prompt)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = generate(model, ids, args.new_tokens)
    generate_s = time.perf_counter() - t0
    tokens = out[0, args.prompt:].tolist()
    print(describe(args.model, model), file=sys.stderr)
    print("real_models: " + json.dumps({
        "model": args.model, "parameters": parameter_count(model), "layers": args.layers, "prompt": args.prompt,
        "new_tokens": len(tokens), "threads": torch.get_num_threads(), "build_s": round(build_s, 3),
        "generate_s": round(generate_s, 3),
        "digest": hashlib.sha256(json.dumps(out.tolist()).encode()).hexdigest()[:16]}), flush=True)


if __name__ == "__main__":
    main()
