"""The PyTorch side: torch.stft (an FFT over strided frames) on the same batch,
scaled as SciPy scales (by the window's sum)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import HOP, N_FFT, REPEATS, signals

x = torch.from_numpy(signals())
window = torch.hann_window(N_FFT)
with torch.no_grad():
    for _ in range(REPEATS):
        z = torch.stft(x, n_fft=N_FFT, hop_length=HOP, window=window, center=True, pad_mode="constant",
                       return_complex=True) / window.sum()
print(float(z.abs().mean()))
