"""`magneton export --perfetto-diff` on two tiny real torch runs (the same
product, row by row on A and as one matmul on B): one Chrome trace-event JSON
with both runs as processes on one time axis, the diff's matched regions as
slices carrying their findings, flow pairs between partners, and energy
counter tracks labelled with the samples' provenance. The findings must be
`magneton diff`'s own (the export runs the same analysis)."""

import json
import sys
import textwrap

import pytest

from conftest import TraceDB, require, run_cli

require("torch")

SCRIPT = textwrap.dedent("""
    import sys
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, w = torch.randn(32, 64), torch.randn(64, 64)
    for _ in range(2):
        if sys.argv[1] == "rows":
            y = torch.stack([x[i] @ w for i in range(x.shape[0])])
        else:
            y = x @ w
    print(float(y.sum()))
""")

PHASES = {"X", "M", "C", "s", "f"}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("perfetto_diff")
    script = d / "prod.py"
    script.write_text(SCRIPT)
    paths = []
    for mode in ("rows", "matmul"):
        out = str(d / f"{mode}.mtrace")
        r = run_cli("record", "--values", "--label", f"prod-{mode}", "-o", out, "--", sys.executable, str(script), mode)
        assert r.returncode == 0, r.stderr
        paths.append(out)
    return d, paths


def export(d, a, b, name="diff.json", *extra):
    out = d / name
    r = run_cli("export", "--perfetto-diff", a, b, "-o", str(out), *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def check_trace_event_format(doc):
    """The Chrome trace-event format as trace processors read it."""
    assert isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    assert doc["displayTimeUnit"] in ("ms", "ns")
    tracks = {}
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES, e
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name", "thread_sort_index"), e
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    # Slices on one thread track nest: none ends inside another after starting inside it.
    for spans in tracks.values():
        stack = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start + 1e-6:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, (start, end, stack[-1])
            stack.append(end)


def test_export_holds_both_runs_and_the_diff(pair):
    d, (a, b) = pair
    doc = export(d, a, b)
    check_trace_event_format(doc)
    events = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(procs) == [1, 2]
    assert procs[1].startswith("A: prod-rows") and procs[2].startswith("B: prod-matmul")
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert sum(e["pid"] == 1 for e in ops) == TraceDB(a).query("SELECT count(*) FROM ops")[0][0]
    assert sum(e["pid"] == 2 for e in ops) == TraceDB(b).query("SELECT count(*) FROM ops")[0][0]

    # One time axis: both runs' first op at the job start the metadata names.
    job_ts = doc["otherData"]["job_start_ts_us"]
    assert "job start" in doc["otherData"]["time_axis"]
    for pid in (1, 2):
        first = min(e["ts"] for e in ops if e["pid"] == pid and not e["name"].startswith("magneton::"))
        assert first == pytest.approx(job_ts, abs=1e-3)

    # Region slices: the matched findings of `magneton diff` on the same pair, by rank and verdict.
    regions = [e for e in events if e["ph"] == "X" and e["cat"] == "region"]
    assert regions
    r = run_cli("diff", a, b, "--no-rerun", "--json", str(d / "report.json"))
    assert r.returncode == 0, r.stderr
    report = json.loads((d / "report.json").read_text())
    matched = {f["rank"]: f for f in report["findings"] if f["kind"] == "matched"}
    for e in regions:
        args = e["args"]
        f = matched[args["rank"]]
        assert args["verdict"] == f["verdict"]
        assert args["energy_provenance"] == report["energy"]["provenance"]
        assert args["finding_energy_a_uj"] == pytest.approx(f["a"]["energy_uj"])
        assert args["finding_energy_b_uj"] == pytest.approx(f["b"]["energy_uj"])
        assert (args["root_cause"] or {}).get("kind") == (f["root_cause"] or {}).get("kind")
        assert "energy_ratio_interval" in args
    assert {e["args"]["rank"] for e in regions} == set(matched)

    # Flows: one per instance pair, both ends inside that pair's region slices.
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    assert len(starts) == len(regions) // 2

    def region_at(flow):
        return [r for r in regions if r["pid"] == flow["pid"] and r["tid"] == flow["tid"]
                and r["ts"] <= flow["ts"] <= r["ts"] + r["dur"]]

    for fid, s in starts.items():
        f = ends[fid]
        assert {s["pid"], f["pid"]} == {1, 2} and s["ts"] <= f["ts"] and f["bp"] == "e"
        (rs,), (rf,) = region_at(s), region_at(f)
        assert (rs["args"]["rank"], rs["args"]["instance"]) == (rf["args"]["rank"], rf["args"]["instance"])

    # Counter tracks per domain, labelled with the samples' own provenance.
    for pid, path in ((1, a), (2, b)):
        samples = TraceDB(path).query("SELECT DISTINCT domain, provenance FROM energy_samples")
        assert samples
        names = {e["name"] for e in events if e["ph"] == "C" and e["pid"] == pid}
        assert names == {f"{dom} {kind} ({prov})" for dom, prov in samples for kind in ("power", "energy")}


def test_chrome_export_carries_counters_and_options_mirror_diff(pair):
    d, (a, b) = pair
    out = d / "a.json"
    r = run_cli("export", "--chrome", a, "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    check_trace_event_format(doc)
    provenances = {p for (p,) in TraceDB(a).query("SELECT DISTINCT provenance FROM energy_samples")}
    counters = {e["name"] for e in doc["traceEvents"] if e["ph"] == "C"}
    assert counters and all(any(f"({p})" in n for p in provenances) for n in counters)
    # diff's options: a tau no difference clears leaves every finding equal.
    doc = export(d, a, b, "tau.json", "--tau", "1000")
    assert doc["otherData"]["options"]["tau"] == 1000
    assert all(e["args"]["verdict"] == "equal" for e in doc["traceEvents"] if e.get("cat") == "region")
    # Bad use is one clear error.
    r = run_cli("export", "--perfetto-diff", a, "-o", str(d / "x.json"))
    assert r.returncode != 0 and "two traces" in r.stderr
    r = run_cli("export", "--chrome", a, b, "-o", str(d / "x.json"))
    assert r.returncode != 0 and "one trace" in r.stderr
