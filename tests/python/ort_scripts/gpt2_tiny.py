"""The tiny GPT-2 both engines run: random init from a fixed seed, so every
process that imports this builds identical weights (nothing is downloaded)."""

import torch
import transformers


def build():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=64,
                                  bos_token_id=99, eos_token_id=99)
    cfg._attn_implementation = "eager"
    return transformers.GPT2LMHeadModel(cfg).eval()


def input_ids():
    return torch.randint(0, 100, (1, 12), generator=torch.Generator().manual_seed(1))


class Logits(torch.nn.Module):
    """forward(ids) -> logits, the signature exported to ONNX. An explicit
    all-ones attention mask keeps transformers off torch.diff (packed-sequence
    detection), which the TorchScript exporter cannot export."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, ids):
        return self.m(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
