"""Wasteful: anomaly detection left on from debugging (torch.autograd.set_detect_anomaly(True) at the top of the
training script): every forward op stores a Python traceback, every backward output is checked for NaN."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import train

torch.autograd.set_detect_anomaly(True)
train()
