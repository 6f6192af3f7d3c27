"""A jitted 6-layer, 512-wide tanh MLP over a batch of 256, 20 calls, with
weights and inputs drawn in NumPy (float64 by NumPy's default): JAX turns
them into float32 arrays unless jax_enable_x64 is on, in which case the
whole jitted program computes in float64."""
import numpy as np

import jax
import jax.numpy as jnp


@jax.jit
def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x


def run():
    rng = np.random.default_rng(0)
    ws = [jnp.asarray(rng.standard_normal((512, 512)) * 0.05) for _ in range(6)]
    x = jnp.asarray(rng.standard_normal((256, 512)))
    total = 0.0
    for i in range(20):
        total += float(mlp(ws, x * (1.0 + 0.01 * i)).sum())
    print(f"computed in {x.dtype}")
    print(f"{total:.4f}")
