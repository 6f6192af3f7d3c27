"""Efficient: the same decode on tensor cores (FlashInfer dispatches to its prefill kernel)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import decode

decode(use_tensor_cores=True)
