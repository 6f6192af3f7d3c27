"""Efficient: the same worker with libgomp's default wait policy (spin briefly, then sleep)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve()
