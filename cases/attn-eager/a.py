"""Wasteful: explicit matmul/softmax attention."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run("eager")
