"""The benchmark's workload (never imports magneton): a jitted 8-layer,
256-wide tanh MLP, run N times (default 200) after one warm-up call; prints
the loop's wall time in seconds on its last line ("loop_s <seconds>")."""
import sys
import time

import jax
import jax.numpy as jnp


def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    f = jax.jit(mlp)
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    ws = [jax.random.normal(k, (256, 256)) * 0.05 for k in keys]
    x = jnp.ones((32, 256))
    f(ws, x).block_until_ready()  # compiled outside the timed loop, as a user would measure
    t = time.perf_counter()
    for _ in range(n):
        y = f(ws, x)
    y.block_until_ready()
    print(f"loop_s {time.perf_counter() - t:.6f}")


if __name__ == "__main__":
    main()
