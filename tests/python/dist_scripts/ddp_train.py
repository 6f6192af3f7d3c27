"""A tiny 2-rank DDP training loop on CPU (gloo), started by torchrun; knows
nothing of Magneton. KILL_RANK=<r> makes rank r kill itself with SIGKILL
mid-run (an OOM kill); FIND_UNUSED=1 sets find_unused_parameters."""
import os
import signal

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)),
                find_unused_parameters=os.environ.get("FIND_UNUSED") == "1")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(rank)
    for step in range(int(os.environ.get("STEPS", "4"))):
        x = torch.randn(8, 16, generator=gen)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if os.environ.get("KILL_RANK") == str(rank) and step == 1:
            os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
