"""Efficient: JAX's default (jax_enable_x64 off): the same data become float32."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax

jax.config.update("jax_enable_x64", False)  # the default, spelled out
from common import run

run()
