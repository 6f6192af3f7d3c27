"""Wasteful: jax_enable_x64 on (set for one part of a program, e.g. a float64
solver), so the jitted model, fed NumPy float64 data, computes in float64."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax

jax.config.update("jax_enable_x64", True)
from common import run

run()
