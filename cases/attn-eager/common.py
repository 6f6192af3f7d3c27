import torch
from transformers import GPT2Config, GPT2LMHeadModel


def run(attn_implementation):
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=128, n_head=4, vocab_size=1000, n_positions=512,
                     bos_token_id=999, eos_token_id=999)
    cfg._attn_implementation = attn_implementation
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 1000, (4, 256), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = model(ids).logits
    print(float(logits.float().abs().mean()))
