"""The same MLP in PyTorch, the same weights (nn.Linear keeps the kernel transposed)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import SIZES, STEPS, weights

layers, x = weights()
mods = []
for i, (w, b) in enumerate(layers):
    with torch.device("meta"):  # no random draw: the weights are assigned below
        lin = torch.nn.Linear(w.shape[0], w.shape[1])
    lin.load_state_dict({"weight": torch.from_numpy(w.T.copy()), "bias": torch.from_numpy(b)}, assign=True)
    mods.append(lin)
    if i < len(layers) - 1:
        mods.append(torch.nn.ReLU())
model = torch.nn.Sequential(*mods).eval()
with torch.inference_mode():
    for step in range(STEPS):
        y = model(torch.from_numpy(x[step]))
print("sum", round(float(y.sum()), 3))
