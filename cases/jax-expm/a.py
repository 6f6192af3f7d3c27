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
total = jnp.zeros_like(x)
for i in range(REPEATS):
    total = total + jax.scipy.linalg.expm(x * (1.0 + 0.1 * i))
print(float(jnp.abs(total).mean()))
