"""Wasteful: torch.cdist told never to use the matrix-product form (compute_mode="donot_use_mm_for_euclid_dist"):
every one of the 512 x 8192 distances is a separate difference-square-sum loop."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import nearest_neighbours

nearest_neighbours(lambda q, db: torch.cdist(q, db, compute_mode="donot_use_mm_for_euclid_dist"))
