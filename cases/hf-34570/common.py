import torch

torch.manual_seed(0)
EMB = torch.randn(2048, 512, dtype=torch.float64)  # old token embeddings
CENTERED = EMB - EMB.mean(0)
COV = CENTERED.T @ CENTERED / EMB.shape[0]  # symmetric positive semi-definite
