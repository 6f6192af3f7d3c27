"""Wasteful: torch.compile(..., dynamic=False) specialises on every input shape, so a sequence whose length changes
every step recompiles every step (Dynamo trace, AOT, Inductor and its C++ compile each time)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import run

run(lambda fn: torch.compile(fn, dynamic=False))
