"""Wasteful: opt_einsum switched off ("skip path calculation", as the torch.einsum docs offer), so the four-operand
einsum contracts left to right: W1 @ W2 and then @ W3 are 1024^3 matrix products before the batch is touched."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import project

torch.backends.opt_einsum.enabled = False
project()
