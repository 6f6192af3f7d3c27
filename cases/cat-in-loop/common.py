import torch


def encoder_and_chunks(steps=300):
    """A streaming feature encoder (linear + GELU, random weights) and 300 chunks of 16 frames x 256 features."""
    torch.manual_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU()).eval()
    chunks = torch.randn(steps, 16, 256, generator=torch.Generator().manual_seed(1))
    return encoder, chunks


def report(features):
    print(tuple(features.shape), round(float(features.abs().mean()), 5))
