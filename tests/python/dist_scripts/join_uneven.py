"""pytorch/pytorch#181115 on CPU with gloo (cases/pytorch-181115 is the GPU
version): two DDP ranks with uneven data, rank 0 has 2 batches and rank 1 has
12. `join` trains under torch.distributed.algorithms.Join: the finished rank 0
shadows every remaining all-reduce of rank 1 (a zero-gradient all-reduce per
step). `alone` trains the common steps with DDP and lets rank 1 finish alone
with gradients scaled by 1/world_size, what Join computes by default.
Started by torchrun: python join_uneven.py join|alone."""
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

BATCHES = [2, 12]


def step(net, opt, x, y, grad_scale=1.0):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(net(x), y)
    loss.backward()
    if grad_scale != 1.0:
        for p in net.parameters():
            p.grad.mul_(grad_scale)
    opt.step()


def main(mode):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = DDP(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(100 + rank)
    batches = [(torch.randn(32, 64, generator=g), torch.randn(32, 64, generator=g)) for _ in range(BATCHES[rank])]
    if mode == "join":
        with Join([net]):
            for x, y in batches:
                step(net, opt, x, y)
    else:
        common = min(BATCHES)
        for x, y in batches[:common]:
            step(net, opt, x, y)
        for x, y in batches[common:]:
            step(net.module, opt, x, y, grad_scale=1.0 / world)
    if BATCHES[rank] == max(BATCHES):
        print(f"{sum(p.detach().double().abs().sum().item() for p in net.module.parameters()):.6g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
