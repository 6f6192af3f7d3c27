"""fp32 inference of a small random-init GPT-2 on a GPU: the matmuls run in full
FP32 or, when allowed, on TF32 tensor cores (Ampere and newer)."""
import sys

import torch
from transformers import GPT2Config, GPT2Model


def require_cuda():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU: TF32 tensor cores exist only on NVIDIA GPUs (Ampere or newer)", file=sys.stderr)
        sys.exit(77)


def run():
    require_cuda()
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=1024, n_head=16, vocab_size=1000, n_positions=512)
    model = GPT2Model(cfg).cuda().eval()
    ids = torch.randint(0, 1000, (8, 512), generator=torch.Generator().manual_seed(1)).cuda()
    total = 0.0
    with torch.no_grad():
        for _ in range(10):
            total += model(ids).last_hidden_state.norm().item()
    print(f"{total:.5g}")
