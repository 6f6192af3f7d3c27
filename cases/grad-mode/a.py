"""Control: inference with autograd recording on."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import IDS, MODEL

print(float(MODEL(IDS).logits.detach().abs().mean()))
