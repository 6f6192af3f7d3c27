"""Wasteful: the elementwise chain runs eagerly, one ATen kernel per op, each reading and writing the whole 16 MB
tensor (9 passes over memory per step where one would do)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import postprocess, run

run(postprocess)
