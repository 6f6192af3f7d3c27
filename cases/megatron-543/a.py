"""Wasteful: K/V expanded with repeat_interleave even when the repeat count is 1."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import K, NUM_QUERY_GROUPS, Q

with torch.no_grad():
    total = 0.0
    for q, k in zip(Q, K):
        k = k.repeat_interleave(q.shape[1] // NUM_QUERY_GROUPS, dim=1)
        total += float((q @ k.transpose(-1, -2)).sum())
print(total)
