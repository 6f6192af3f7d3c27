"""Two DDP ranks on the CPU (gloo), started by torch.multiprocessing.spawn,
training the same deep stack of small blocks (LayerNorm, Linear, Tanh: 128
parameter tensors, about as many as GPT-2 small's 148) on the same data for
the same steps. Every parameter takes part in every forward;
`find_unused_parameters` is the only difference between a.py and b.py.

With find_unused_parameters=True, DDP's reducer walks the autograd graph from
the forward's outputs after every forward to find parameters that will get no
gradient (`Reducer::search_unused_parameters`); here it finds none, and DDP
warns at the first step that the flag "results in an extra traversal of the
autograd graph every iteration, which can adversely affect performance".
What it costs grows with the number of parameter tensors: after every
backward the reducer also all-reduces its map of used parameters and reads
each parameter's entry back (`select` + `item` per parameter tensor), so the
model is deep rather than wide (README.md)."""
import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2
STEPS = 40
BLOCKS, WIDTH, BATCH = 32, 16, 4  # many small parameter tensors: the per-parameter work is what grows


def model():
    torch.manual_seed(0)
    layers = []
    for _ in range(BLOCKS):
        layers += [torch.nn.LayerNorm(WIDTH), torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers)


def worker(rank, init_file, make_ddp):
    torch.set_num_threads(1)  # two ranks share the cores
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=WORLD)
    net = make_ddp(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        x, y = torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, WIDTH, generator=g)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    if rank == 0:
        print(f"{sum(p.detach().double().abs().sum().item() for p in net.module.parameters()):.6g}", flush=True)
    dist.barrier()  # both ranks done with every collective before either tears its group down
    dist.destroy_process_group()


def train(make_ddp):
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(os.path.join(tmp, "rendezvous"), make_ddp), nprocs=WORLD, join=True)
