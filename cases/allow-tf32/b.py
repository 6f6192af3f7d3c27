"""Efficient: allow TF32 tensor cores for fp32 matmuls."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import run

torch.backends.cuda.matmul.allow_tf32 = True
run()
