#!/usr/bin/env python3
"""bench/gpu_check step: replay on the GPU against a direct NVML loop and
against the online attribution (docs/ENERGY.md, "Replay on a GPU").

Records a small GPU program (a 4096x4096 linear layer on a batch of 64, a
2048x2048 matmul, a softmax), then
  1. `magneton replay --ops` of the first linear, mm and softmax: inputs regenerated on cuda:0, a CUDA graph
     where the op allows, rounds of >= 2 s until the NVML counter moved
     100 mJ; per-call energy with its spread, next to what the recording's
     attribution charged the same ops;
  2. the same linear layer in a plain Python loop, energy from Magneton's
     NVML meter (bench/gpu/nvml_check) around 2 s rounds: the reference for 1.
Prints SUMMARY lines."""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import magneton


def direct_linear_uj(probe):
    def energy_uj():
        return float(subprocess.check_output([probe, "once"]).split()[1])

    lin = torch.nn.Linear(4096, 4096, device="cuda")
    x = torch.randn(64, 4096, device="cuda")
    with torch.no_grad():
        for _ in range(50):
            lin(x)
        torch.cuda.synchronize()
        t = time.time()
        n = 0
        while time.time() - t < 0.5:
            lin(x)
            n += 1
        torch.cuda.synchronize()
        calls = max(1, n * 4)  # ~2 s rounds
        per_call, dur = [], []
        for _ in range(3):
            torch.cuda.synchronize()
            e0, t0 = energy_uj(), time.time()
            for _ in range(calls):
                lin(x)
            torch.cuda.synchronize()
            dur.append((time.time() - t0) / calls)
            per_call.append((energy_uj() - e0) / calls)
    return statistics.mean(per_call), statistics.stdev(per_call), statistics.mean(dur) * 1e6


def main():
    if not torch.cuda.is_available():
        sys.exit("replay_check: torch.cuda is not available")
    probe = sys.argv[1] if len(sys.argv) > 1 else ""
    with tempfile.TemporaryDirectory(prefix="magneton-replay-") as workdir:
        path = os.path.join(workdir, "gpu.mtrace")
        lin = torch.nn.Linear(4096, 4096, device="cuda")
        x = torch.randn(64, 4096, device="cuda")
        a = torch.randn(2048, 2048, device="cuda")
        with magneton.record(path), torch.no_grad():
            for _ in range(20):
                y = lin(x)
                z = a @ a
                torch.softmax(z, dim=-1)
            torch.cuda.synchronize()
        import sqlite3

        db = sqlite3.connect(path)
        op_ids = []
        for name in ("aten::linear", "aten::mm", "aten::_softmax"):
            row = db.execute("select o.id from ops o join strings s on s.id = o.name_id where s.value = ? "
                             "order by o.id limit 1", (name,)).fetchone()
            if row:
                op_ids.append(str(row[0]))
        db.close()
        r = subprocess.run(["magneton", "replay", path, "--ops", ",".join(op_ids), "--rounds", "3"],
                           capture_output=True, text=True)
        print(r.stdout, r.stderr, sep="")
        rows = sqlite3.connect(path).execute(
            "select signature, device, method, energy_uj_mean, energy_uj_stddev, online_energy_uj, meter, error "
            "from op_replays").fetchall()
    for sig, device, method, e, sd, online, meter, error in rows:
        if error:
            print(f"SUMMARY replay {sig[:50]}: not replayed: {error}")
            continue
        if e is None:
            print(f"SUMMARY replay {sig[:50]} on {device} ({method}): time only, no meter for its domain")
            continue
        ratio = f"{e / online:.2f}" if online else "-"
        spread = f"{100 * sd / e:.1f}%" if e and sd is not None else "-"
        print(f"SUMMARY replay {sig[:50]} on {device} ({method}, {meter}): {e:.1f} µJ/call ± {spread}; "
              f"online attribution {online if online is None else round(online, 1)} µJ/call; replay/online {ratio}")
    if probe:
        mean, sd, us = direct_linear_uj(probe)
        linear = [row for row in rows if row[0].startswith("aten::linear")]
        replayed = (f"{linear[0][3]:.1f} µJ/call (replay, {linear[0][2]})" if linear and not linear[0][7] and
                    linear[0][3] is not None else "no replay figure")
        print(f"SUMMARY linear 4096x4096 batch 64, direct NVML loop: {mean:.1f} µJ/call ± {100 * sd / mean:.1f}% "
              f"({us:.1f} µs/call) vs {replayed}")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
