#!/usr/bin/env python3
"""bench/gpu_check step: device fingerprints on a GPU against host
fingerprints of the same values (docs/TRACE_FORMAT.md, "Device fingerprints").

1. For tensors of several dtypes, shapes and layouts on cuda:0, the device
   path's fingerprint vs the host path's on a .cpu() copy: equivalent at
   1e-9, quantiles and strong part equal, mean within rounding; the time of
   each path (the device path includes waiting for its side stream).
2. A small MLP recorded with --values on the GPU and on the CPU: how many
   tensors of the GPU run `magneton match` pairs with the CPU run's
   (different hardware rounds differently: matched at the default epsilon).

Prints one SUMMARY line per part. Needs magneton installed against this
torch and a CUDA GPU."""

import math
import os
import subprocess
import sys
import tempfile
import time

import torch

import magneton
from magneton.recorders import torch_values


def cases(device):
    g = torch.Generator(device="cpu").manual_seed(3)
    base = (torch.randn(256, 192, 160, generator=g) * 2 + 1).to(device)
    big = torch.randn(4096, 4096, generator=g).to(device)
    yield "fp32 3-d", base
    yield "fp32 permuted", base.permute(2, 0, 1)
    yield "fp32 16M transposed", big.t()
    yield "fp32 strided slice", big[1::3, 2::5]
    yield "fp32 expanded", torch.randn(1, 512, generator=g).to(device).expand(2048, 512)
    special = torch.randn(300, 300, generator=g)
    special[0, 0], special[1, 1], special[2, 2] = math.nan, math.inf, -math.inf
    yield "fp32 NaN/Inf", special.to(device)
    yield "fp16", big.half()
    yield "bf16 transposed", big.bfloat16().t()
    yield "fp64", base.double()
    yield "int64", torch.randint(-10**6, 10**6, (2048, 1024), generator=g).to(device)
    yield "uint8", torch.randint(0, 255, (1024, 1024), generator=g, dtype=torch.uint8).to(device)
    yield "bool", (torch.rand(1000, 1000, generator=g) > 0.5).to(device)
    yield "scalar", torch.tensor(3.25, device=device)


def timed(fn, repeats=5):
    best = math.inf
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def part1():
    agree = 0
    rows = []
    for name, t in cases("cuda"):
        assert torch_values.value_path(t) == "device (side stream)", torch_values.value_path(t)
        dev, dev_s = timed(lambda: torch_values.fingerprint(t, "device"))
        host, host_s = timed(lambda: torch_values.fingerprint(t.cpu(), "host"))
        ok, reason = torch_values.compare(host, dev, 1e-9)
        d, h = torch_values.decode(dev), torch_values.decode(host)
        exact = d["quantiles"] == h["quantiles"] and d["marginals"] == h["marginals"] and d["min"] == h["min"]
        mean_rel = abs(d["mean"] - h["mean"]) / max(abs(h["mean"]), 1e-300) if h["mean"] else abs(d["mean"])
        agree += ok and exact
        rows.append((name, t.numel(), ok and exact, mean_rel, dev_s * 1e3, host_s * 1e3, reason))
    print(f"{'tensor':<22} {'elements':>10} {'agree':>6} {'mean rel diff':>14} {'device ms':>10} {'copy+host ms':>13}")
    for name, n, ok, rel, dms, hms, reason in rows:
        print(f"{name:<22} {n:>10} {str(ok):>6} {rel:>14.2e} {dms:>10.3f} {hms:>13.3f}  {reason}")
    print(f"SUMMARY device fingerprints: {agree}/{len(rows)} agree with the host fingerprint of the same values "
          f"(equivalent at 1e-9, quantiles/strong part/min equal); largest tensor "
          f"{max(r[1] for r in rows)} elements: device {rows[2][4]:.2f} ms vs copy+host {rows[2][5]:.2f} ms")
    return agree == len(rows)


def part2(workdir):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 128))
    x = torch.randn(64, 256)
    paths = {}
    for device in ("cpu", "cuda"):
        paths[device] = os.path.join(workdir, f"mlp-{device}.mtrace")
        m, xd = model.to(device), x.to(device)
        with magneton.record(paths[device], values=True), torch.no_grad():
            m(xd).softmax(-1).sum()
        torch.cuda.synchronize()
    import sqlite3

    meta = dict(sqlite3.connect(paths["cuda"]).execute(
        "select key, value from meta where key like 'recorder.device_fingerprint%'").fetchall())
    r = subprocess.run(["magneton", "match", paths["cpu"], paths["cuda"]], capture_output=True, text=True)
    tail = "\n".join(r.stdout.strip().splitlines()[-6:])
    print(tail)
    print(f"SUMMARY GPU vs CPU run of one MLP (--values): GPU trace {meta.get('recorder.device_fingerprints')} device "
          f"fingerprints, {meta.get('recorder.device_fingerprint_errors')} errors; magneton match rc={r.returncode}: "
          f"{r.stdout.strip().splitlines()[0] if r.stdout.strip() else r.stderr.strip()[:200]}")
    return r.returncode == 0


def main():
    if not torch.cuda.is_available():
        sys.exit("fingerprint_check: torch.cuda is not available")
    with tempfile.TemporaryDirectory(prefix="magneton-fp-") as workdir:
        ok = part1()
        ok = part2(workdir) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
