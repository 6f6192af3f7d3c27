"""Linear layers with a bias on a GPU: one fused torch.addmm (cuBLAS/cuBLASLt
with the bias in the GEMM) or a plain torch.mm followed by an add."""
import sys

import torch

# (tokens, in_features, out_features): tall-skinny and wide projections.
SHAPES = [(32768, 256, 256), (32768, 128, 1024), (8192, 4096, 512), (1024, 1024, 32768)]
REPEATS = 50


def require_cuda():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU: the case compares cuBLAS kernel choices for addmm vs mm + add", file=sys.stderr)
        sys.exit(77)


def run(fused):
    require_cuda()
    g = torch.Generator(device="cuda").manual_seed(0)
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    for m, k, n in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
        w = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g) / k**0.5
        bias = torch.randn(n, device="cuda", dtype=torch.float16, generator=g)
        for _ in range(REPEATS):
            y = torch.addmm(bias, x, w) if fused else torch.mm(x, w) + bias
        total += y.float().norm()
    print(f"{total.item():.5g}")
