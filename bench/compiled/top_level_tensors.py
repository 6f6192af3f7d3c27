#!/usr/bin/env python3
"""How much of a torch.compile'd program's dataflow a recording shows: an 8-layer, 256-wide tanh MLP under
torch.compile (compiled in the recording), run `--steps` times, recorded with `magneton record`; prints the
fraction of top-level ops (recorder ops aside) that have tensors, the Inductor kernel ops and the compile regions.

  python3 bench/compiled/top_level_tensors.py [--steps 20] [--values]
"""

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile

PROGRAM = """
import torch
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(256, 256), torch.nn.Tanh()]
model = torch.compile(torch.nn.Sequential(*layers))
x = torch.randn(32, 256)
with torch.no_grad():
    for _ in range({steps}):
        y = model(x)
print(float(y.sum()))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--values", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="magneton-compiled-")
    script, trace = os.path.join(tmp, "mlp.py"), os.path.join(tmp, "mlp.mtrace")
    with open(script, "w") as f:
        f.write(PROGRAM.format(steps=args.steps))
    cmd = ["magneton", "record", *(["--values"] if args.values else []), "-o", trace, "--", sys.executable, script]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = sqlite3.connect(trace)
    rows = db.execute(
        "SELECT s.value, EXISTS(SELECT 1 FROM op_tensors t WHERE t.op_id = o.id) FROM ops o "
        "JOIN strings s ON s.id = o.name_id WHERE o.parent_id IS NULL AND s.value NOT LIKE 'magneton::%'").fetchall()
    with_tensors = sum(1 for _, has in rows if has)
    kernels = sum(1 for name, _ in rows if name.startswith("inductor::") and name != "inductor::reinterpret_tensor")
    compiles = sum(1 for name, _ in rows if name == "torch.compile::compile")
    without = sorted({name for name, has in rows if not has})
    print(f"8-layer 256-wide tanh MLP under torch.compile, {args.steps} steps{' (--values)' if args.values else ''}")
    print(f"top-level ops with tensors: {with_tensors} of {len(rows)} ({100.0 * with_tensors / max(1, len(rows)):.1f}%)")
    print(f"Inductor kernel ops: {kernels}; compile regions: {compiles}; top-level ops without tensors: {without}")


if __name__ == "__main__":
    main()
