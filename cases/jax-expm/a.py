"""Wasteful: jax.scipy.linalg.expm on a batch of matrices. Batched (vmapped),
its lax.switch over Padé degrees and its lax.cond per squaring step become
selects, so every approximant and all 16 squarings are computed for every
matrix (jax-ml/jax#5647)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax
import jax.numpy as jnp
from common import REPEATS, matrices

x = jnp.asarray(matrices())
for _ in range(REPEATS):
    y = jax.scipy.linalg.expm(x)
print(float(jnp.abs(y).mean()))
