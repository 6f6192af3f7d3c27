"""HF GPT-2 generate() on a tiny random model (the same program on both sides of an identical pair)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=256, bos_token_id=999,
                 eos_token_id=999)
model = GPT2LMHeadModel(cfg).eval()
ids = torch.randint(0, 1000, (1, 32), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    out = model.generate(ids, max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=0)
print(out[0, -16:].tolist())
