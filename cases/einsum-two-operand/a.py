"""Control: opt_einsum switched off, but the einsum has two operands: there is no contraction order to choose, so the
same bmm runs either way."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import attention_scores

torch.backends.opt_einsum.enabled = False
attention_scores()
