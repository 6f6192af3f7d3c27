#!/usr/bin/env python3
"""bench/gpu_check step 5: one SUMMARY line per case of a `magneton eval
--json` result (schema magneton.eval/1), with the energy's domain and
provenance, so the GPU cases' figures can go into docs/EVALUATION.md."""

import json
import sys


def main(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"SUMMARY eval: no results ({e})")
        return 1
    for c in report.get("cases", []):
        if c.get("skipped"):
            print(f"SUMMARY eval {c['id']}: skipped: {c['skipped']}")
        elif not c.get("ok"):
            print(f"SUMMARY eval {c['id']}: error: {c.get('error', '')[:200]}")
        else:
            e, h = c["energy"], c["headline"]
            print(f"SUMMARY eval {c['id']}: detected={h['detected']} root_cause_right={h['root_cause_right']} "
                  f"false_positive={h['false_positive']}; energy A {e['a_uj'] / 1e6:.2f} J, B {e['b_uj'] / 1e6:.2f} J "
                  f"({e['domain']}, {e['provenance']}), saving {100 * e['saving_share']:.1f}%; "
                  f"record {c['record_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
