"""Control: the same inference under torch.inference_mode()."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import IDS, MODEL

with torch.inference_mode():
    print(float(MODEL(IDS).logits.abs().mean()))
