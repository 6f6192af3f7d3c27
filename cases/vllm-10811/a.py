"""Wasteful: compute into a temporary and copy it into the preallocated output buffer."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve(use_out=False)
