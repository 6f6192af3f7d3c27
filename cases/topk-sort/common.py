import torch

torch.manual_seed(0)
LOGITS = torch.randn(64, 50257)  # a batch of next-token logits
TOP_K = 50
