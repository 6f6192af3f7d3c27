"""Efficient: with dynamic=None (the default, automatic dynamic shapes) the second length seen recompiles once with a
symbolic length, and every later length reuses that program."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import run

run(lambda fn: torch.compile(fn, dynamic=None))
