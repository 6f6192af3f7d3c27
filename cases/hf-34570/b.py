"""Efficient: eigvalsh exploits symmetry and returns real eigenvalues."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import COV

is_pd = bool((torch.linalg.eigvalsh(COV) > 0).all())
print(is_pd)
