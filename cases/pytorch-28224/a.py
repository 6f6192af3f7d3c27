"""Wasteful: torch.cuda.synchronize() spins a CPU core while the GPU works."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run(blocking_wait=False)
