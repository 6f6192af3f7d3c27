"""The torch side: the same MLP as a torch.nn.Module (Linear → LayerNorm → ReLU), the same weights: torch's
LayerNorm is one fused kernel (aten::native_layer_norm)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import EPS, SIZES, STEPS, weights

torch.set_num_threads(1)  # one thread per side, as a.py (README)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        with torch.device("meta"):  # no random draw: the weights are assigned below
            self.fcs = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(SIZES[:-1], SIZES[1:]))
            self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(o, eps=EPS) for o in SIZES[1:-1])
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        for fc, norm in zip(self.fcs, self.norms):
            x = self.relu(norm(fc(x)))
        return self.fcs[-1](x)


dense, norms, x = weights()
state = {}
for i, (w, b) in enumerate(dense):  # nn.Linear keeps the kernel transposed
    state[f"fcs.{i}.weight"], state[f"fcs.{i}.bias"] = torch.from_numpy(w.T.copy()), torch.from_numpy(b)
for i, (gamma, beta) in enumerate(norms):
    state[f"norms.{i}.weight"], state[f"norms.{i}.bias"] = torch.from_numpy(gamma), torch.from_numpy(beta)
model = MLP()
model.load_state_dict(state, assign=True)
model.eval()
batches = torch.from_numpy(x)
total = 0.0
with torch.inference_mode():
    for step in range(STEPS):
        y = model(batches[step])
        total += float(y.sum())
print(round(total, 2))  # the two frameworks agree to rounding (tests/python/test_cases.py)
