#!/usr/bin/env python3
"""Recording cost of a jitted JAX loop (issue 35): the jitted 8-layer,
256-wide tanh MLP of mlp_loop.py run 200 times, measured side by side in one
run, interleaved, `--repeats` rounds, medians of the loop's own wall time
(the program's `time.perf_counter` around the 200 calls):

  native     python mlp_loop.py
  jit        magneton record -- python mlp_loop.py                (jit mode, the default)
  jit+values magneton record --values -- python mlp_loop.py
  eager      MAGNETON_JAX_MODE=eager magneton record -- python mlp_loop.py

Prints each configuration's median and its ratio to native, and for the jit
recording how many xla::* ops (per-fusion times) it holds. Target: jit <= 1.3x.
For jit+values, also the replay that gives the first call of each executable
its per-fusion values (at stop, outside the loop and every op: meta
xla.values_replay_ms / xla.values_replay_calls), median per call replayed,
and how many xla::* ops got values.

  bench/jax_jit/run.py [--repeats 5] [--calls 200] [--magneton PATH] [--python PATH]
                      [--configs native,jit,...] [--baseline-magneton PATH]

--baseline-magneton adds "jit@base": jit mode recorded by another build's CLI
(its own installed package: PYTHONPATH is dropped), interleaved with the rest,
so a change is measured against the build before it under the same load.
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def loop_seconds(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    lines = [l for l in out.splitlines() if l.startswith("loop_s ")]
    return float(lines[-1].split()[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--magneton", default=shutil.which("magneton") or "magneton")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--configs", default="native,jit,jit+values,eager")
    ap.add_argument("--baseline-magneton", default=None)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="magneton-jaxjit-bench-")
    script = [args.python, os.path.join(HERE, "mlp_loop.py"), str(args.calls)]
    trace = os.path.join(work, "run.mtrace")
    base_env = dict(os.environ)
    eager_env = dict(base_env, MAGNETON_JAX_MODE="eager")
    configs = {
        "native": (script, base_env),
        "jit": ([args.magneton, "record", "-o", trace, "--"] + script, base_env),
        "jit+values": ([args.magneton, "record", "--values", "-o", trace, "--"] + script, base_env),
        "eager": ([args.magneton, "record", "-o", trace, "--"] + script, eager_env),
    }
    if args.baseline_magneton:
        configs["jit@base"] = ([args.baseline_magneton, "record", "-o", trace, "--"] + script,
                               {k: v for k, v in base_env.items() if k != "PYTHONPATH"})
    wanted = args.configs.split(",") + (["jit@base"] if args.baseline_magneton else [])
    configs = {name: c for name, c in configs.items() if name in wanted or name == "native"}
    times = {name: [] for name in configs}
    xla_ops = None
    replay_ms_per_call, values_ops = [], None
    for _ in range(args.repeats):
        for name, (cmd, env) in configs.items():
            times[name].append(loop_seconds(cmd, env))
            if name == "jit":
                db = sqlite3.connect(trace)
                xla_ops = db.execute("SELECT COUNT(*) FROM ops o JOIN strings s ON s.id = o.name_id "
                                     "WHERE s.value LIKE 'xla::%'").fetchone()[0]
                db.close()
            if name == "jit+values":
                db = sqlite3.connect(trace)
                m = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'xla.values%'").fetchall())
                db.close()
                if int(m.get("xla.values_replay_calls", 0)):
                    replay_ms_per_call.append(float(m["xla.values_replay_ms"]) / int(m["xla.values_replay_calls"]))
                    values_ops = f"{m.get('xla.values_ops')} xla ops with values in {m.get('xla.values_calls')} replayed calls"
    native = statistics.median(times["native"])
    print(f"{args.calls} calls of a jitted 8x256 tanh MLP, {args.repeats} interleaved rounds, medians")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:11s} {med * 1e3:9.1f} ms  {med / native:6.2f}x   (runs: "
              + ", ".join(f"{t * 1e3:.0f}" for t in ts) + ")")
    print(f"xla::* ops (per-fusion times) in the jit recording: {xla_ops}")
    if replay_ms_per_call:
        print(f"jit+values replay at stop: {statistics.median(replay_ms_per_call):.1f} ms per call replayed (runs: "
              + ", ".join(f"{t:.0f}" for t in replay_ms_per_call) + f"); {values_ops}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
