"""Wasteful: decoding without the KV cache recomputes the whole prefix every step."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import generate

generate(use_cache=False)
