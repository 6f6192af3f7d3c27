"""The JAX side: jax.scipy.signal.stft on a batch of signals (jax-ml/jax#28614:
its framing was a convolution, conv_general_dilated_patches, until PR #28662)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax
import jax.numpy as jnp
from common import HOP, N_FFT, REPEATS, signals

x = jnp.asarray(signals())
total = 0.0
for i in range(REPEATS):
    _, _, z = jax.scipy.signal.stft(x * (1.0 + 0.1 * i), window="hann", nperseg=N_FFT, noverlap=N_FFT - HOP)
    total = total + jnp.abs(z)
print(float(total.mean()))
