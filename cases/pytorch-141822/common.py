import torch

torch.manual_seed(0)
LOGITS = torch.randn(512, 32000)
TARGET = torch.randint(0, 32000, (512,), generator=torch.Generator().manual_seed(1))
