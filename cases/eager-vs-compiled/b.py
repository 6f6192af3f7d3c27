"""Efficient: torch.compile fuses the chain into one Inductor kernel (one pass over memory per step). Its
compilation is a region of its own (torch.compile::compile), extra work on this side."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import postprocess, run

run(torch.compile(postprocess))
