"""The PyTorch side: torch.stft (an FFT over strided frames) on the same batch,
scaled as SciPy scales (by the window's sum)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import HOP, N_FFT, REPEATS, signals

x = torch.from_numpy(signals())
window = torch.hann_window(N_FFT)
total = 0.0
with torch.no_grad():
    for i in range(REPEATS):
        z = torch.stft(x * (1.0 + 0.1 * i), n_fft=N_FFT, hop_length=HOP, window=window, center=True,
                       pad_mode="constant", return_complex=True) / window.sum()
        total = total + z.abs()
print(float(total.mean()))
