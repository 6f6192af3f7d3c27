"""Cost of recording how each nn.Module was constructed (scope origins, docs/TRACE_FORMAT.md): 4001 modules
built while recording, with the nn.Module.__init__ wrapper and without it (docs/PERFORMANCE.md)."""
import time, torch, magneton
from magneton.recorders import torch_module_origins as o
def build():
    t = time.perf_counter()
    torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.GELU()) for _ in range(1000)])
    return time.perf_counter() - t
import os, tempfile
magneton.start(os.path.join(tempfile.mkdtemp(), "ctor.mtrace"))
build()
with_origins = min(build() for _ in range(5))
o.uninstall(torch)
without = min(build() for _ in range(5))
magneton.stop()
print(f"4001 modules while recording: {with_origins*1e3:.0f} ms with scope origins, {without*1e3:.0f} ms without ({(with_origins-without)/4001*1e6:.1f} us per module)")
