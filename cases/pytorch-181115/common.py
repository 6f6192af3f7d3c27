"""Two DDP ranks with uneven data: rank 0 has 4 batches, rank 1 has 40.

With torch.distributed.algorithms.Join, the rank that runs out of data keeps
"shadowing" every collective of the other rank (a zero gradient all-reduce per
step), so its GPU stays busy until the last rank finishes. The alternative
here trains the common steps with DDP and lets the rank with more data finish
alone, scaling its gradients by 1/world_size exactly as Join's default
(divide_by_initial_world_size=True) does, so the result is the same.

On a CUDA machine the ranks train on GPUs (NCCL with two or more, else gloo
with both ranks on one); without one, on the CPU with gloo, on a smaller model
(one thread per rank), where the finished rank's shadow all-reduces cost its
process time and its share of the package's idle power instead."""
import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD = 2
BATCHES = [4, 40]  # per rank
GPU = torch.cuda.is_available()
BATCH, FEATURES = (512, 1024) if GPU else (32, 64)


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 4 * FEATURES), torch.nn.GELU(),
                               torch.nn.Linear(4 * FEATURES, FEATURES))


def data(rank, device):
    g = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(BATCH, FEATURES, generator=g).to(device), torch.randn(BATCH, FEATURES, generator=g).to(device))
            for _ in range(BATCHES[rank])]


def step(net, opt, x, y, grad_scale=1.0):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(net(x), y)
    loss.backward()
    if grad_scale != 1.0:
        for p in net.parameters():
            p.grad.mul_(grad_scale)
    opt.step()


def worker(rank, init_file, use_join):
    if GPU:
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        # gloo: works with two ranks on one GPU (NCCL needs one GPU per rank).
        backend = "nccl" if torch.cuda.device_count() >= WORLD else "gloo"
    else:
        device = torch.device("cpu")
        torch.set_num_threads(1)  # two ranks share the cores
        backend = "gloo"
    dist.init_process_group(backend, init_method="file://" + init_file, rank=rank, world_size=WORLD)
    net = DDP(model().to(device), device_ids=[device.index] if GPU else None)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    batches = data(rank, device)
    if use_join:
        with Join([net]):
            for x, y in batches:
                step(net, opt, x, y)
    else:
        common = min(BATCHES)  # both ranks know every rank's count up front (here: a constant)
        for x, y in batches[:common]:
            step(net, opt, x, y)
        for x, y in batches[common:]:  # the rank with more data goes on alone; the other one is done
            step(net.module, opt, x, y, grad_scale=1.0 / WORLD)
    if GPU:
        torch.cuda.synchronize()
    if BATCHES[rank] == max(BATCHES):
        checksum = sum(p.detach().double().abs().sum().item() for p in net.module.parameters())
        print(f"{checksum:.6g}", flush=True)
    # Tear down together: a gloo rank that destroys its group while the other
    # still trains alone aborted now and then ("terminate called without an
    # active exception", SIGABRT in rank 0). The finished rank waits here
    # blocked, not computing, unlike Join's shadow all-reduces.
    dist.barrier()
    dist.destroy_process_group()


def train(use_join):
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(os.path.join(tmp, "rendezvous"), use_join), nprocs=WORLD, join=True)
