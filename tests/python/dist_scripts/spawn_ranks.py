"""Starts its own 2 ranks with torch.multiprocessing.spawn (no torchrun); each
joins a gloo process group given its rank by argument, all-reduces, then runs
point-to-point ops and a collective in a second group: rank 0 sends a tensor
to rank 1, rank 1 broadcasts one from rank 1, and both all-reduce in a group
made by new_group."""
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
    message = torch.zeros(16, dtype=torch.float64)  # 128 bytes
    if rank == 0:
        dist.send(message + 1, dst=1)
    else:
        dist.recv(message, src=0)
    dist.broadcast(message, src=1)
    pair = dist.new_group([0, 1])
    dist.all_reduce(torch.ones(8), group=pair)  # 32 bytes
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
