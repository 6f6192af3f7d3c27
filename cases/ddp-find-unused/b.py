"""Efficient: DDP with its default find_unused_parameters=False: no search of the autograd graph."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch.nn.parallel import DistributedDataParallel as DDP
from common import train


def make_ddp(module):
    return DDP(module)


if __name__ == "__main__":
    train(make_ddp)
