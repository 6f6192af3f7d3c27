"""Control: log_softmax + gather, the same loss."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import LOGITS, TARGET

with torch.no_grad():
    for _ in range(10):
        loss = -LOGITS.log_softmax(-1).gather(1, TARGET[:, None]).mean()
print(float(loss))
