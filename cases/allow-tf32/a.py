"""Wasteful: fp32 matmuls in full FP32 (PyTorch's default since 1.12:
torch.backends.cuda.matmul.allow_tf32 is False)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import run

torch.backends.cuda.matmul.allow_tf32 = False  # the default, spelled out
run()
