"""Efficient: normalise over dim 1 directly (LayerNorm2d as timm does it now)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import BIAS, WEIGHT, X

with torch.no_grad():
    for _ in range(10):
        u = X.mean(1, keepdim=True)
        s = (X - u).pow(2).mean(1, keepdim=True)
        y = (X - u) / torch.sqrt(s + 1e-6)
        y = y * WEIGHT[:, None, None] + BIAS[:, None, None]
print(float(y.abs().mean()))
