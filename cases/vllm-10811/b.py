"""Efficient: write straight into the preallocated buffer with out=."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve(use_out=True)
