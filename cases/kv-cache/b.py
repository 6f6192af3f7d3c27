"""Efficient: the same generation with the KV cache."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import generate

generate(use_cache=True)
