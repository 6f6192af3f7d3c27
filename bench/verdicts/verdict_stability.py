"""How often magneton calls waste where there is none, and misses it where there is (issue 14).

Prints counts, measured side by side in one run:
  identical pairs, one recording per side (`diff a b`): trials with 0 waste findings, per workload;
  identical pairs under `compare -n N`: trials with 0 waste findings;
  real waste (cases kv-cache, topk-sort, attn-eager) under `compare -n N`: trials whose top waste
  finding is on the expected side.

    python3 bench/verdicts/verdict_stability.py [--trials 20] [--runs 3] [--only identical|compare|waste]
        [--workloads gpt2-generate,...] [--cases kv-cache,...]

The targets (issue 14) are 20 of 20 for each line. A full run records about 700 programs: hours on two
cores; --trials 3 takes about 40 minutes. Energy is whatever this machine has (estimated without a counter).
"""
import argparse
import json
import shutil
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = {
    "gpt2-generate": ["gpt2_generate.py"],
    "train-loop": ["train_loop.py"],
    "converging-loop": ["converging_loop.py", "2000"],
    "ort-session": ["ort_session.py"],
}
WASTE_CASES = ["kv-cache", "topk-sort", "attn-eager"]


def magneton(*args):
    r = subprocess.run(["magneton", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"magneton {' '.join(args[:2])} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r


def workload_argv(name):
    script, *args = WORKLOADS[name]
    return [sys.executable, os.path.join(HERE, "workloads", script), *args]


def waste_findings(report_path):
    with open(report_path) as f:
        report = json.load(f)
    return [x for x in report["findings"] if x["verdict"] == "waste"]


def identical_one_recording(name, work):
    a, b, out = (os.path.join(work, n) for n in ("a.mtrace", "b.mtrace", "diff.json"))
    for path in (a, b):
        magneton("record", "--values", "-o", path, "--", *workload_argv(name))
    magneton("diff", a, b, "--no-rerun", "--json", out)
    return len(waste_findings(out))


def compare(argv_a, argv_b, runs, work):
    """The waste findings, and how many pairs compare recorded (more than `runs` when a verdict was undecided)."""
    out = os.path.join(work, "diff.json")
    magneton("compare", "-n", str(runs), "--values", "--out-dir", work, "--json", out, "--", *argv_a, "--", *argv_b)
    with open(out) as f:
        recorded = json.load(f).get("runs", runs)
    return waste_findings(out), recorded


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--runs", type=int, default=3, help="recordings per side for compare")
    p.add_argument("--only", choices=["identical", "compare", "waste"])
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset")
    p.add_argument("--cases", default=",".join(WASTE_CASES), help="comma-separated subset of the waste cases")
    p.add_argument("--keep-misses", metavar="DIR",
                   help="copy a missed trial's traces and report to DIR/<label>-<trial> (to see why it missed)")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="magneton-bench-config-"))
    names = [n for n in args.workloads.split(",") if n]
    lines = []

    def trial_loop(label, fn):
        good, started = 0, time.time()
        for t in range(args.trials):
            with tempfile.TemporaryDirectory(prefix="magneton-bench-") as work:
                ok, detail = fn(work)
                if not ok and args.keep_misses:
                    kept = os.path.join(args.keep_misses, f"{label.split(',')[0].replace(' ', '-')}-{t + 1}")
                    shutil.copytree(work, kept, dirs_exist_ok=True)
                    detail += f" (kept in {kept})"
            good += ok
            print(f"  {label} trial {t + 1}/{args.trials}: {'ok' if ok else 'MISS'} {detail}", file=sys.stderr,
                  flush=True)
        lines.append(f"{label:<48} {good:>3}/{args.trials}   ({time.time() - started:.0f} s)")
        print(lines[-1], flush=True)

    if args.only in (None, "identical"):
        for name in names:
            trial_loop(f"identical {name}, diff a b: 0 waste",
                       lambda work, n=name: (lambda k: (k == 0, f"{k} waste"))(identical_one_recording(n, work)))
    if args.only in (None, "compare"):
        for name in names:
            trial_loop(f"identical {name}, compare -n {args.runs}: 0 waste",
                       lambda work, n=name: (lambda w, k: (not w, f"{len(w)} waste, {k} runs"))(
                           *compare(workload_argv(n), workload_argv(n), args.runs, work)))
    if args.only in (None, "waste"):
        for case in [c for c in args.cases.split(",") if c]:
            folder = os.path.join(REPO, "cases", case)
            with open(os.path.join(folder, "expected.json")) as f:
                side = json.load(f)["waste_side"].upper()
            argv_a = [sys.executable, os.path.join(folder, "a.py")]
            argv_b = [sys.executable, os.path.join(folder, "b.py")]

            def one(work, side=side, argv_a=argv_a, argv_b=argv_b):
                w, recorded = compare(argv_a, argv_b, args.runs, work)
                top = w[0]["costlier_side"] if w else "-"
                return top == side, f"top waste on {top}, expected {side}, {recorded} runs"

            trial_loop(f"waste {case}, compare -n {args.runs}: called on {side}", one)
    print("\nsummary (trials meeting the target / trials):")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
