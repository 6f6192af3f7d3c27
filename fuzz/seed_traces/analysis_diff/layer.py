# The program behind this seed pair (fuzz/analysis_diff_fuzzer.cc), as tests/python/test_hostile_structure.py records it:
#   magneton record --values -o slow.mtrace -- env MAGNETON_FAST=0 python layer.py   (and MAGNETON_FAST=1 -> fast.mtrace)
# then, to keep each file under 200 kB: DELETE FROM energy_samples WHERE rowid % 2 = 0; PRAGMA page_size=4096; VACUUM;

import os
import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        if os.environ.get("MAGNETON_FAST", "0") == "1":
            return self.fc(x)
        return torch.stack([self.fc(x[i]) for i in range(x.shape[0])])


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = torch.nn.Sequential(Block(), torch.nn.ReLU())
    x = torch.randn(8, 16)
    with torch.no_grad():
        for _ in range(2):
            y = net(x)
    print(float(y.sum()))


main()
