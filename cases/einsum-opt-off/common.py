import torch


def project(batches=8, width=1024, rows=32):
    """A probe maps a batch of embeddings through three linear maps, written in matrix order, y = W1 W2 W3 x, as
    one einsum with the batch operand last."""
    g = torch.Generator().manual_seed(0)
    w1, w2, w3 = (torch.randn(width, width, generator=g) / width ** 0.5 for _ in range(3))
    total = 0.0
    with torch.no_grad():
        for _ in range(batches):
            x = torch.randn(rows, width, generator=g)
            y = torch.einsum("ij,jk,kl,bl->bi", w1, w2, w3, x)
            total += float(y.abs().mean())
    print(round(total, 4))
