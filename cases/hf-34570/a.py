"""Wasteful: general eigenvalues of a symmetric covariance (resize_token_embeddings
checked positive-definiteness this way before PR #35571)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import COV

is_pd = bool((torch.linalg.eigvals(COV).real > 0).all())
print(is_pd)
