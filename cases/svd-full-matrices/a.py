"""Wasteful: torch.linalg.svd with its default full_matrices=True builds the full 2048x2048 U of each tall matrix,
which the PCA never reads."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import principal_directions

principal_directions(lambda x: torch.linalg.svd(x))
