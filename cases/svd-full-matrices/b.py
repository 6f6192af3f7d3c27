"""Efficient: the reduced SVD (full_matrices=False), what torch.svd's default some=True computed."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import principal_directions

principal_directions(lambda x: torch.linalg.svd(x, full_matrices=False))
