import os
import tempfile

import torch


def run(compile_fn):
    """Scores variable-length sequences (a new length every step) with a compiled scoring function;
    `compile_fn(fn)` compiles it. Inductor's caches go to a fresh folder, so each run compiles as a first run
    does (a warm cache from an earlier run would make the recompiles nearly free and hide what they cost)."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cache-")
    g = torch.Generator().manual_seed(0)
    w = torch.randn(64, 64, generator=g)

    def score(x):
        h = torch.tanh(x @ w)
        return (h * h).sum(dim=0)

    compiled = compile_fn(score)
    total = torch.zeros(64)
    with torch.no_grad():
        for length in range(24, 24 + 8 * 12, 12):  # 8 steps, each a new sequence length
            total += compiled(torch.randn(length, 64, generator=g))
    print(round(float(total.sum()), 3))
