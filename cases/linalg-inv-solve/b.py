"""Efficient: torch.linalg.solve: one LU factorization and two triangular solves for the 8 targets."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import posterior_means

posterior_means(lambda gram, y: torch.linalg.solve(gram, y))
