import numpy as np

SIZES = (256, 512, 512, 256, 10)
BATCH = 64
STEPS = 8


def weights():
    """One MLP's weights (kernel as in x @ W, bias) and STEPS distinct input batches, shared by both
    frameworks (distinct, so that each step's layer outputs are values of their own to pair)."""
    rng = np.random.default_rng(0)
    layers = [((rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32), (rng.standard_normal(o) * 0.1).astype(np.float32))
              for i, o in zip(SIZES[:-1], SIZES[1:])]
    x = rng.standard_normal((STEPS, BATCH, SIZES[0])).astype(np.float32)
    return layers, x
