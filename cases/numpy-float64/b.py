"""Efficient: the same arrays as float32 tensors (the precision the model needs)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import features, soft_knn

q, k, w = (torch.from_numpy(a).float() for a in features())
soft_knn(q, k, w)
