"""Wasteful: sort the whole vocabulary to keep the top k (sampling code before vLLM PR #5698)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import LOGITS, TOP_K

with torch.no_grad():
    for _ in range(20):
        values, indices = LOGITS.sort(dim=-1, descending=True)
        top_values, top_indices = values[:, :TOP_K], indices[:, :TOP_K]
print(float(top_values.sum()))
