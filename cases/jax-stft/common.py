import numpy as np

N_FFT = 512
HOP = 256
REPEATS = 5


def signals():
    """A batch of 16 one-second 16 kHz signals (length a multiple of HOP, so
    SciPy-style padding and torch's centring give the same frames)."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((16, 16384)).astype(np.float32)
