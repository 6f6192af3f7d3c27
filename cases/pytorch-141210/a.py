"""Wasteful (on the shapes of pytorch/pytorch#141210): the fused torch.addmm."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run(fused=True)
