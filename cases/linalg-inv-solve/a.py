"""Wasteful: the explicit inverse of each 1024 x 1024 Gram matrix, then a matrix product with the 8 targets."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import posterior_means

posterior_means(lambda gram, y: torch.linalg.inv(gram) @ y)
