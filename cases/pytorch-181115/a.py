"""Wasteful: uneven inputs under dist.Join; the finished rank shadows every remaining all-reduce."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import train

if __name__ == "__main__":
    train(use_join=True)
