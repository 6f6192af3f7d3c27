"""Wasteful: LayerNorm over channels of NCHW data by permuting to NHWC and back,
with a contiguous copy on each side (the pattern timm PR #1340 replaced)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn.functional as F
from common import BIAS, WEIGHT, X

with torch.no_grad():
    for _ in range(10):
        y = X.permute(0, 2, 3, 1).contiguous()
        y = F.layer_norm(y, (96,), WEIGHT, BIAS, 1e-6)
        y = y.permute(0, 3, 1, 2).contiguous()
print(float(y.abs().mean()))
