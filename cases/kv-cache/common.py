import torch
from transformers import GPT2Config, GPT2LMHeadModel


def model_and_prompt():
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=128, n_head=4, vocab_size=1000, n_positions=512,
                     bos_token_id=999, eos_token_id=999)
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 1000, (1, 128), generator=torch.Generator().manual_seed(1))
    return model, ids


def generate(use_cache):
    model, ids = model_and_prompt()
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                             use_cache=use_cache, pad_token_id=0)
    print(out[0, -32:].tolist())
