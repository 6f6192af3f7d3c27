"""A GPU job that the host waits for after every chunk of work. CUDA's default
schedule (cudaDeviceScheduleAuto, i.e. spin on a machine with more cores than
GPUs) makes the waiting CPU thread poll at 100% for the whole GPU time."""
import sys

import torch

N, CHUNKS, MATMULS_PER_CHUNK = 8192, 20, 40


def require_cuda():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU: the waste is the host thread spinning while it waits for the GPU", file=sys.stderr)
        sys.exit(77)


def run(blocking_wait):
    require_cuda()
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(N, N, device="cuda", generator=g) / N**0.5
    x = torch.randn(N, N, device="cuda", generator=g)
    results = []
    for chunk in range(CHUNKS):
        for _ in range(MATMULS_PER_CHUNK):
            x = torch.tanh(a @ x)
        if blocking_wait:
            done = torch.cuda.Event(blocking=True)  # cudaEventBlockingSync: the thread sleeps until the GPU is done
            done.record()
            done.synchronize()
        else:
            torch.cuda.synchronize()  # busy-waits (polls) under the default device flags
        results.append(x[0, 0].item())
    print(f"{sum(abs(r) for r in results):.5g}")
