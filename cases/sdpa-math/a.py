"""Wasteful: attention forced onto SDPA's math backend, which materialises the full attention matrix
(matmul, softmax, matmul) instead of the fused flash kernel PyTorch picks on CPU."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch.nn.attention import SDPBackend, sdpa_kernel
from common import model_and_tokens, run

model, x = model_and_tokens()
with sdpa_kernel(SDPBackend.MATH):
    run(model, x)
