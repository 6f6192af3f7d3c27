"""Wasteful: DDP(find_unused_parameters=True) on a model whose every parameter is used: the reducer searches the
autograd graph for unused parameters after every forward and finds none."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch.nn.parallel import DistributedDataParallel as DDP
from common import train


def make_ddp(module):
    return DDP(module, find_unused_parameters=True)


if __name__ == "__main__":
    train(make_ddp)
