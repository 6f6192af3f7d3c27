"""Efficient: the same attention with SDPA's default backend choice (the fused CPU flash kernel)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import model_and_tokens, run

model, x = model_and_tokens()
run(model, x)
