"""One recording per side on the public waste cases: is clear waste called, on the right side, with the right root
cause (issue 34)?

Runs `magneton eval CASES --repeats 1` (each case's a.py and b.py recorded once, with --values, then diffed as the
README shows) and prints, per waste case, the job contrast (the costlier side's job energy over the other's), whether
the top waste finding is on the expected side, and whether its root cause is right, then the count over the cases
whose job contrast is at least --min-contrast (the target: 90% of them). Controls are listed too (a control passes
with no waste finding).

    python3 bench/verdicts/one_recording_cases.py [--cases-dir cases] [--case ID,...] [--min-contrast 1.5]
        [--json eval.json] [--reuse]

Energy is whatever this machine has (estimated without a counter); a busy machine leaves findings inconclusive.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases-dir", default=os.path.join(REPO, "cases"))
    p.add_argument("--case", default="", help="comma-separated case ids (default: every case)")
    p.add_argument("--min-contrast", type=float, default=1.5)
    p.add_argument("--json", help="keep the eval's JSON here")
    p.add_argument("--reuse", action="store_true", help="reuse recordings newer than their scripts")
    p.add_argument("--work-dir", help="where recordings go (default: eval's)")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = args.json or os.path.join(tempfile.mkdtemp(prefix="magneton-one-recording-"), "eval.json")
    cmd = ["magneton", "eval", args.cases_dir, "--repeats", "1", "--json", out,
           "--markdown", os.path.join(os.path.dirname(out), "eval.md")]
    if args.case:
        cmd += ["--case", args.case]
    if args.reuse:
        cmd.append("--reuse")
    if args.work_dir:
        cmd += ["--work-dir", args.work_dir]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if r.returncode not in (0, 1):
        sys.exit(f"magneton eval failed ({r.returncode})")
    with open(out) as f:
        report = json.load(f)
    rows, counted, passed, controls = [], 0, 0, []
    for c in report["cases"]:
        if c.get("skipped") or not c.get("ok"):
            rows.append(f"  {c['id']:<20} {'skipped' if c.get('skipped') else 'error'}: "
                        f"{c.get('skipped') or c.get('error')}")
            continue
        h = c["headline"]
        top = h.get("top_waste") or {}
        if c["category"] == "control":
            controls.append(f"  {c['id']:<20} control: {'ok, no waste' if not h['false_positive'] else 'FALSE WASTE'}"
                            f" ({h['waste_findings']} waste findings)")
            continue
        a, b = c["energy"]["a_uj"], c["energy"]["b_uj"]
        contrast = max(a, b) / min(a, b) if min(a, b) > 0 else float("inf")
        right = bool(h["detected"] and h["root_cause_right"])
        big = contrast >= args.min_contrast
        counted += big
        passed += big and right
        rows.append(f"  {c['id']:<20} job {contrast:5.2f}x{' ' if big else '*'} "
                    f"top waste {top.get('side', '-'):<2} detected {'yes' if h['detected'] else 'no ':<3} "
                    f"root cause {'right' if h['root_cause_right'] else 'wrong'}   {h['note'][:90]}")
    print(f"one recording per side (magneton eval --repeats 1), job contrast >= {args.min_contrast}x "
          f"(* below it, not counted):")
    print("\n".join(rows))
    print("\n".join(controls))
    share = 100.0 * passed / counted if counted else 0.0
    print(f"waste on the right side with the right root cause: {passed}/{counted} ({share:.0f}%) of the cases "
          f"whose job contrast is >= {args.min_contrast}x; controls with no waste: "
          f"{sum('ok, no waste' in c for c in controls)}/{len(controls)}")


if __name__ == "__main__":
    main()
