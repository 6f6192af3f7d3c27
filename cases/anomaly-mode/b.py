"""Efficient: the same training steps with anomaly detection off (PyTorch's default)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import train

train()
