"""Wasteful: every layer recomputes the rotary cos/sin tables."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import D, LAYERS, N, X, rope_tables, rotate

with torch.no_grad():
    h = X
    for _ in range(LAYERS):
        cos, sin = rope_tables(N, D)
        h = rotate(h, cos, sin)
print(float(h.abs().mean()))
