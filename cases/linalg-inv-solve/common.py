import torch


def posterior_means(solve, kernels=8, points=1024, targets=8):
    """Gaussian-process regression: the posterior mean weights K^-1 y for eight RBF kernels (length scales) over the
    same 1024 training points; `solve(K, y)` returns K^-1 y."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(points, 3, generator=g)
    y = torch.randn(points, targets, generator=g)
    sq_dist = torch.cdist(x, x).pow(2)
    total = 0.0
    with torch.no_grad():
        for k in range(kernels):
            length_scale = 0.2 + 0.05 * k
            gram = torch.exp(-0.5 * sq_dist / length_scale ** 2) + 0.1 * torch.eye(points)
            alpha = solve(gram, y)
            total += float(alpha.abs().sum())
    print(round(total, 2))
