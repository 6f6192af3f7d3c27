"""Starts its own 2 ranks with torch.multiprocessing.spawn (no torchrun); each
joins a gloo process group given its rank by argument and all-reduces."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world_size, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    t = torch.full((64,), float(rank + 1))
    for _ in range(3):
        dist.all_reduce(t)
        t = t / 3
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
