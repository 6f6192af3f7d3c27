import torch

torch.manual_seed(0)
LAYERS, B, H_KV, N, D = 8, 4, 8, 512, 64
NUM_QUERY_GROUPS = 8  # == heads: repeats per group is 1
K = [torch.randn(B, H_KV, N, D) for _ in range(LAYERS)]
Q = [torch.randn(B, 8, N, D) for _ in range(LAYERS)]
