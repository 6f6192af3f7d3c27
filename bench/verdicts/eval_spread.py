"""The run-to-run spread of `magneton eval` F1 (issue 14: F1 >= 0.9 at every epsilon in [1e-5, 5e-2] in each of
3 consecutive full runs), from the --json output of each run, as a Markdown table:

    for k in 1 2 3; do magneton eval cases --repeats 3 --work-dir /tmp/ev$k --json /tmp/ev$k.json; done
    python3 bench/verdicts/eval_spread.py /tmp/ev1.json /tmp/ev2.json /tmp/ev3.json
"""
import json
import sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
taus = sorted({s["tau"] for s in runs[0]["sweep"]})
eps = [e for e in sorted({s["epsilon"] for s in runs[0]["sweep"]}) if 1e-5 <= e <= 5e-2]
print("| run | min F1 over ε in [1e-5, 5e-2] (any τ) | F1 at ε 1e-2, τ 0.1 | precision / recall there | misses, false positives |")
print("|---|---|---|---|---|")
for k, r in enumerate(runs, 1):
    sel = [s for s in r["sweep"] if s["epsilon"] in eps]
    head = [s for s in r["sweep"] if s["epsilon"] == 1e-2 and s["tau"] == 0.1][0]
    miss = [c["id"] for c in r["cases"] if not c.get("skipped") and c.get("headline") and c["category"] != "control" and not c["headline"]["detected"]]
    fps = [c["id"] for c in r["cases"] if not c.get("skipped") and c.get("headline") and c["category"] == "control" and c["headline"]["false_positive"]]
    print(f"| {k} | {min(s['f1'] for s in sel):.2f} | {head['f1']:.2f} | {head['precision']:.2f} / {head['recall']:.2f} | {', '.join(miss) or '-'}; {', '.join(fps) or '-'} |")
