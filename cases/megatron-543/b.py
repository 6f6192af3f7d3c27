"""Efficient: expand only when there is something to repeat (Megatron-LM PR #537)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import K, NUM_QUERY_GROUPS, Q

with torch.no_grad():
    total = 0.0
    for q, k in zip(Q, K):
        repeats = q.shape[1] // NUM_QUERY_GROUPS
        if repeats > 1:
            k = k.repeat_interleave(repeats, dim=1)
        total += float((q @ k.transpose(-1, -2)).sum())
print(total)
