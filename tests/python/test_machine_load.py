"""A recording says how busy the machine was (trace meta machine.*), and the
diff will not blame the side that ran beside a busy neighbour for what that
neighbour can explain: recorded beside spinning processes, the cheaper side
of a real HF generate() pair once came out 1.3x costlier and was called
waste."""

import json
import os
import subprocess
import sys
import textwrap
import time

from conftest import TraceDB, require, run_cli

require("torch")
require("transformers")

SCRIPT = textwrap.dedent("""
    import sys, torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=256,
                                   bos_token_id=499, eos_token_id=499)).eval()
    ids = torch.randint(0, 500, (1, 128), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        m.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False, pad_token_id=0,
                   use_cache=sys.argv[1] == "cache")
""")


def load_of(path):
    meta = dict(TraceDB(path).query("SELECT key, value FROM meta WHERE key LIKE 'machine.%'"))
    assert "machine.load_error" not in meta, meta
    return float(meta["machine.others_cpu_share"]) + float(meta["machine.steal_share"])


def test_a_busy_machine_is_measured_and_the_diff_does_not_blame_its_side(tmp_path):
    script = tmp_path / "gen.py"
    script.write_text(SCRIPT)
    a, b = str(tmp_path / "nocache.mtrace"), str(tmp_path / "cache.mtrace")
    r = run_cli("record", "--values", "-o", a, "--", sys.executable, str(script), "nocache")
    assert r.returncode == 0, r.stderr
    # B, the cheaper side, recorded while one spinning process per CPU competes for the machine.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        time.sleep(0.5)
        r = run_cli("record", "--values", "-o", b, "--", sys.executable, str(script), "cache")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert r.returncode == 0, r.stderr
    load_a, load_b = load_of(a), load_of(b)
    # The spinners want every CPU: they take well over a third of the machine's time; A's run had no such neighbour.
    assert load_b > 0.35 and load_b > load_a + 0.2, (load_a, load_b)

    out = str(tmp_path / "diff.json")
    r = run_cli("diff", a, b, "--min-share", "0.01", "--no-rerun", "--json", out)
    assert r.returncode == 0, r.stderr
    # The load is taken over each side's job (first op to last op), from the series the recorder sampled.
    assert "machine load: " in r.stdout and "while B's did" in r.stdout, r.stdout
    with open(out) as f:
        report = json.load(f)
    assert report["b"]["others_cpu_share"] > 0.3 and report["b"]["load_over_job"], report["b"]
    assert report["a"]["load_over_job"], report["a"]
    # Nothing is waste or a trade-off on B's account: whatever B's busy machine made costlier is inconclusive.
    blamed = [f for f in report["findings"] if f["verdict"] in ("waste", "trade_off") and f["costlier_side"] == "B"]
    assert blamed == [], r.stdout
    demoted = [f for f in report["findings"] if f["verdict"] == "inconclusive" and f["costlier_side"] == "B"]
    for f in demoted:
        assert "while B's job ran" in f["uncertainty"]["note"], f["uncertainty"]["note"]
