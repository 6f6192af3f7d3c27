import torch


def train(steps=20, width=128, blocks=12, lr=1e-3):
    """Plain SGD steps (the update written out, as in the PyTorch "Learning PyTorch with Examples" tutorial) of a
    12-block MLP on random data, printing the last loss."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU()) for _ in range(blocks)],
        torch.nn.Linear(width, 1))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, width, generator=g), torch.randn(32, 1, generator=g)
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    print(round(loss.item(), 6))
