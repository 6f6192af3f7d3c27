import torch

torch.manual_seed(0)
X = torch.randn(16, 96, 56, 56)  # channels-first activations (N, C, H, W)
WEIGHT = torch.randn(96)
BIAS = torch.randn(96)
