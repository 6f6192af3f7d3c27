"""Wasteful: decode with CUDA-core kernels (use_tensor_cores=False), what vLLM's
heuristic `num_qo_heads // num_kv_heads > 4` chose for GQA group size 4."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import decode

decode(use_tensor_cores=False)
