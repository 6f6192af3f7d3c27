"""Control: the same GPT-2 forward as b.py, byte for byte."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=256,
                                   bos_token_id=999, eos_token_id=999)).eval()
ids = torch.randint(0, 1000, (2, 128), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    print(float(model(ids).logits.abs().mean()))
