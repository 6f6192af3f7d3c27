"""Efficient: DDP for the common steps, then the rank with more data finishes alone."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import train

if __name__ == "__main__":
    train(use_join=False)
