"""Efficient: fused scaled_dot_product_attention."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run("sdpa")
