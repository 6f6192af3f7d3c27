"""A serving loop that writes each layer's attention output into a preallocated
buffer, the way vLLM's attention layer hands its backend an `output` tensor."""
import sys

import torch
import torch.nn.functional as F

LAYERS, TOKENS, HEADS, HEAD_DIM, STEPS = 8, 4096, 16, 128, 20


def require_cuda():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU: the extra device-to-device copy of the attention output is the waste measured",
              file=sys.stderr)
        sys.exit(77)


def serve(use_out):
    require_cuda()
    g = torch.Generator(device="cuda").manual_seed(0)
    hidden = HEADS * HEAD_DIM
    w_o = [torch.randn(hidden, hidden, device="cuda", dtype=torch.float16, generator=g) / hidden**0.5
           for _ in range(LAYERS)]
    x = torch.randn(TOKENS, hidden, device="cuda", dtype=torch.float16, generator=g)
    output = torch.empty(TOKENS, hidden, device="cuda", dtype=torch.float16)  # preallocated, reused every layer
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    for step in range(STEPS):
        h = x
        for layer in range(LAYERS):
            # the backend's attention: output projection into the preallocated buffer
            if use_out:
                torch.mm(h, w_o[layer], out=output)
            else:
                output[:] = torch.mm(h, w_o[layer])  # result in a fresh tensor, then copied into the buffer
            h = F.layer_norm(output, (hidden,))
        total += h.float().norm()
    print(f"{total.item():.5g}")
