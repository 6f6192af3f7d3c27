"""Greedy generation with a tiny random-init Llama whose config keeps a long
max_position_embeddings (4096, Llama-2's). In transformers 4.38.x, every forward
builds the 4D causal mask from a max_position_embeddings² buffer:
    self.causal_mask[None, None, :, :].repeat(batch, 1, 1, 1).to(dtype) * min_dtype
whatever the sequence length; 4.38.1 holds that buffer as int64, 4.38.2 as bool
(PR #29210), and 4.39 builds the mask only as large as the sequence (PR #29753).
The same script runs on both sides; env.json picks the transformers version."""
import sys

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

MAX_POSITIONS, PROMPT, NEW_TOKENS = 4096, 16, 32


def require_version(version):
    # Without env.json's environment the comparison would be meaningless.
    if transformers.__version__ != version:
        sys.exit(f"needs transformers=={version} (cases/hf-29206/env.json; magneton eval installs it into a cached "
                 f"environment), found {transformers.__version__}")


def generate():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=MAX_POSITIONS,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = LlamaForCausalLM(cfg).eval()
    # Weights from one generator in parameter order, so that both versions
    # decode with identical weights whatever their init code does.
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    ids = torch.randint(3, 1000, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                             min_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0)
    print(out[0, -NEW_TOKENS:].tolist())
