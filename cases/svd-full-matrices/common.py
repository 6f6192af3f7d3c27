import torch


def activations():
    """Activation matrices of 5 layers (2048 tokens x 96 features each), as a probing / compression tool sees them."""
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2048, 96, generator=g) @ torch.randn(96, 96, generator=g) for _ in range(5)]


def principal_directions(svd, components=16):
    """Top principal directions of each layer (PCA via SVD of the centred matrix); `svd` returns (U, S, Vh)."""
    out = []
    with torch.no_grad():
        for x in activations():
            _, s, vh = svd(x - x.mean(dim=0))
            out.append((vh[:components].abs().sum(), s[:components].sum()))
    print([round(float(v), 3) for v, _ in out])
