"""Wasteful: transformers 4.38.1 (see env.json) builds the causal mask from an
int64 max_position_embeddings² buffer on every forward."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import generate, require_version

require_version("4.38.1")
generate()
