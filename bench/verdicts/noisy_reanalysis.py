"""Two builds of magneton's diff on the same noisy recordings: how often each calls real waste, and false waste.

A machine whose whole runs slow down by 1.5-2x from one run to the next is what the statistics must survive
(issue 14). This records, beside a neighbour that takes one CPU for random spans (0.2-2 s busy, 0.2-2 s idle),
per trial:
  the kv-cache case (use_cache=False vs True: real waste on A), 3 pairs interleaved;
  an identical pair (bench/verdicts/workloads/gpt2_generate.py twice), 3 pairs interleaved;
then diffs each trial's pairs with every build given and prints, side by side, the trials where the top waste
finding is on A (kv-cache) and the trials with no waste finding (identical).

    python3 bench/verdicts/noisy_reanalysis.py --magneton OLD_BIN,NEW_BIN [--trials 10] [--no-noise]

Recording uses the installed package (`magneton record`); only the analysis differs between the builds.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SIDES = {
    "kv-cache": ([sys.executable, os.path.join(REPO, "cases", "kv-cache", "a.py")],
                 [sys.executable, os.path.join(REPO, "cases", "kv-cache", "b.py")]),
    "identical": ([sys.executable, os.path.join(HERE, "workloads", "gpt2_generate.py")],
                  [sys.executable, os.path.join(HERE, "workloads", "gpt2_generate.py")]),
}
NOISE = """
import random, time
rng = random.Random(%d)
while True:
    end = time.time() + rng.uniform(0.2, 2.0)
    while time.time() < end:
        pass
    time.sleep(rng.uniform(0.2, 2.0))
"""


def record(argv, path):
    r = subprocess.run(["magneton", "record", "--values", "-o", path, "--", *argv], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"record failed: {r.stderr[-2000:]}")


def diff(binary, a_paths, b_paths, out):
    r = subprocess.run([binary, "diff", ",".join(a_paths), ",".join(b_paths), "--no-rerun", "--json", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{binary} diff failed: {r.stderr[-2000:]}")
    with open(out) as f:
        findings = json.load(f)["findings"]
    return [x for x in findings if x["verdict"] == "waste"], findings


def why(findings):
    """The costliest non-equal finding's verdict, ratio interval and note: why it was (not) called."""
    flagged = [x for x in findings if x["verdict"] != "equal"]
    if not flagged:
        return "nothing beyond tau"
    top = max(flagged, key=lambda x: x.get("saving_uj") or 0)
    u = top["uncertainty"]
    iv = u["energy_ratio"]
    interval = f"[{iv['low']:.2f}, {iv['high']:.2f}]" if iv else "n/a"
    return f"{top['verdict']} {top['energy_ratio']:.2f} {interval} {u['note'][:160]}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--magneton", required=True, help="comma-separated magneton binaries to compare")
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--runs", type=int, default=3, help="recorded pairs per trial")
    p.add_argument("--no-noise", action="store_true", help="record without the neighbour")
    p.add_argument("--why", action="store_true", help="print each build's costliest flagged finding and its note")
    p.add_argument("--cases", default=",".join(SIDES), help="comma-separated subset: kv-cache,identical")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="magneton-bench-config-"))
    binaries = [b for b in args.magneton.split(",") if b]
    good = {(case, b): 0 for case in SIDES for b in binaries}
    started = time.time()
    noise = None
    if not args.no_noise:
        noise = subprocess.Popen([sys.executable, "-c", NOISE % random.SystemRandom().randrange(1 << 30)])
    try:
        for t in range(args.trials):
            for case, (argv_a, argv_b) in [(c, SIDES[c]) for c in args.cases.split(",") if c]:
                with tempfile.TemporaryDirectory(prefix="magneton-noisy-") as work:
                    a_paths, b_paths = [], []
                    for k in range(args.runs):
                        a, b = os.path.join(work, f"a{k}.mtrace"), os.path.join(work, f"b{k}.mtrace")
                        # Interleaved, alternating which side goes first (as `magneton compare` does).
                        for argv, path in ([(argv_a, a), (argv_b, b)] if k % 2 == 0 else [(argv_b, b), (argv_a, a)]):
                            record(argv, path)
                        a_paths.append(a)
                        b_paths.append(b)
                    verdicts = []
                    for binary in binaries:
                        waste, findings = diff(binary, a_paths, b_paths, os.path.join(work, "diff.json"))
                        ok = (waste and waste[0]["costlier_side"] == "A") if case == "kv-cache" else not waste
                        good[(case, binary)] += bool(ok)
                        top = waste[0]["costlier_side"] if waste else "-"
                        verdicts.append(f"{os.path.basename(binary)}: {len(waste)} waste, top on {top}"
                                        + (f" ({why(findings)})" if args.why else ""))
                    print(f"  trial {t + 1}/{args.trials} {case}: " + "; ".join(verdicts), file=sys.stderr, flush=True)
    finally:
        if noise:
            noise.kill()
            noise.wait()
    print(f"\n{args.trials} trials of {args.runs} pairs, {'no neighbour' if args.no_noise else 'a random neighbour'}, "
          f"{time.time() - started:.0f} s")
    print(f"{'build':<40} {'kv-cache: top waste on A':>26} {'identical: no waste':>22}")
    for b in binaries:
        print(f"{b:<40} {good[('kv-cache', b)]:>22}/{args.trials} {good[('identical', b)]:>18}/{args.trials}")


if __name__ == "__main__":
    main()
