import time

import torch


def serve(requests=12, gap_s=0.3):
    """A CPU inference worker: a request arrives every `gap_s` seconds and gets one small MLP forward."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)).eval()
    batch = torch.randn(64, 512, generator=torch.Generator().manual_seed(1))
    total = 0.0
    with torch.no_grad():
        for _ in range(requests):
            total += float(model(batch).abs().mean())
            time.sleep(gap_s)  # waiting for the next request
    print(round(total, 5))
