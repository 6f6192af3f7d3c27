import numpy as np


def features():
    """Embeddings as a data pipeline hands them over: NumPy arrays, float64 by NumPy's default."""
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((2048, 64))
    keys = rng.standard_normal((4096, 64))
    weights = rng.standard_normal((4096, 16))
    return queries, keys, weights


def soft_knn(q, k, w, steps=10):
    """Soft nearest-neighbour label smoothing over a memory bank: softmax(q k^T / sqrt(d)) @ w."""
    import torch

    with torch.no_grad():
        for _ in range(steps):
            sim = (q @ k.T) * (1.0 / 64 ** 0.5)
            scores = torch.softmax(sim, dim=-1) @ w
    print(scores.dtype)
    print(round(float(scores.abs().mean()), 6))
