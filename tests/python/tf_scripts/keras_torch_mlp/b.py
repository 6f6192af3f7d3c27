"""The same MLP in PyTorch, the same weights (nn.Linear keeps the kernel transposed)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import EPS, STEPS, weights

dense, norms, x = weights()
mods = []
for i, (w, b) in enumerate(dense):
    with torch.device("meta"):  # no random draw: the weights are assigned below
        lin = torch.nn.Linear(w.shape[0], w.shape[1])
    lin.load_state_dict({"weight": torch.from_numpy(w.T.copy()), "bias": torch.from_numpy(b)}, assign=True)
    mods.append(lin)
    if i < len(norms):
        gamma, beta = norms[i]
        with torch.device("meta"):
            ln = torch.nn.LayerNorm(w.shape[1], eps=EPS)
        ln.load_state_dict({"weight": torch.from_numpy(gamma), "bias": torch.from_numpy(beta)}, assign=True)
        mods += [ln, torch.nn.ReLU()]
model = torch.nn.Sequential(*mods).eval()
with torch.inference_mode():
    for step in range(STEPS):
        y = model(torch.from_numpy(x[step]))
print("sum", round(float(y.sum()), 3))
