"""Wasteful: torch.from_numpy keeps NumPy's float64, so every kernel below runs in double precision."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import features, soft_knn

q, k, w = (torch.from_numpy(a) for a in features())
soft_knn(q, k, w)
