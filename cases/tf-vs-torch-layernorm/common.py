import numpy as np

SIZES = (256, 1024, 1024, 16)  # input, two hidden layers (Dense → LayerNorm → ReLU), head
BATCH = 4096
STEPS = 6
EPS = 1e-5  # Keras' LayerNormalization defaults to 1e-3, torch's LayerNorm to 1e-5: both sides are given this one


def weights():
    """The MLP's weights drawn once in NumPy (Dense kernels as in x @ W, biases, LayerNorm scale and shift) and
    STEPS distinct input batches, shared by both frameworks (distinct, so that each step's layer outputs are values
    of their own to pair)."""
    rng = np.random.default_rng(0)
    dense = [((rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32), (rng.standard_normal(o) * 0.1).astype(np.float32))
             for i, o in zip(SIZES[:-1], SIZES[1:])]
    norms = [((1.0 + 0.1 * rng.standard_normal(o)).astype(np.float32), (rng.standard_normal(o) * 0.1).astype(np.float32))
             for o in SIZES[1:-1]]
    x = rng.standard_normal((STEPS, BATCH, SIZES[0])).astype(np.float32)
    return dense, norms, x
