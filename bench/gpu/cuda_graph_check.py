#!/usr/bin/env python3
"""bench/gpu_check step: a CUDA graph captured and replayed under `magneton record`
(docs/TRACE_FORMAT.md "CUDA graphs"; what the sources were researched to hold:
docs/ARCHITECTURE.md "CUDA graphs", to be confirmed here).

A two-layer MLP is captured once with torch.cuda.graph and replayed 5 times in a
recorded child process. Prints what the real Kineto trace held and what the ingest
made of it: the capture and replay ops, the replays' kernels and whether they are
linked to the replay ops, whether the kernels carry graph / graph node ids (Kineto
with CUPTI kernel records of version 5+), and how many were linked to the captured
op that made their node (and, where none, the gpu.graph.* counts that say why).
One SUMMARY line per question. Needs magneton installed against this torch and a GPU."""

import os
import sqlite3
import subprocess
import sys
import tempfile

REPLAYS = 5

SCRIPT = f"""
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)).cuda()
x = torch.randn(32, 256, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    y = model(x)
for _ in range({REPLAYS}):
    graph.replay()
torch.cuda.synchronize()
print("replayed", float(y.sum()))
"""


def main():
    with tempfile.TemporaryDirectory(prefix="magneton-graph-") as work:
        script = os.path.join(work, "graph.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        trace = os.path.join(work, "graph.mtrace")
        r = subprocess.run(["magneton", "record", "-o", trace, "--", sys.executable, script],
                           capture_output=True, text=True, timeout=120)
        print(r.stdout[-2000:], r.stderr[-3000:], sep="\n")
        if r.returncode != 0 or not os.path.exists(trace):
            print(f"SUMMARY CUDA graph: magneton record failed (exit {r.returncode})")
            return 1
        db = sqlite3.connect(trace)
        q = lambda sql, *a: db.execute(sql, a).fetchall()  # noqa: E731
        meta = dict(q("SELECT key, value FROM meta WHERE key LIKE 'gpu.%'"))
        for k in sorted(meta):
            print(f"meta {k} = {meta[k][:200]}")

        def count(name):
            return q("SELECT count(*) FROM ops o JOIN strings s ON s.id = o.name_id WHERE s.value = ?", name)[0][0]

        captures, replays = count("magneton::cuda_graph_capture"), count("cuda_graph::replay")
        captured_ops = q("""WITH RECURSIVE under(id) AS (
                              SELECT o.id FROM ops o JOIN strings s ON s.id = o.name_id
                              WHERE s.value = 'magneton::cuda_graph_capture'
                              UNION SELECT o.id FROM ops o JOIN under u ON o.parent_id = u.id)
                            SELECT count(*) - (SELECT count(*) FROM ops o JOIN strings s ON s.id = o.name_id
                                               WHERE s.value = 'magneton::cuda_graph_capture') FROM under""")[0][0]
        on_replay = q("""SELECT count(*) FROM device_activities d JOIN ops o ON o.id = d.op_id
                         JOIN strings s ON s.id = o.name_id WHERE s.value = 'cuda_graph::replay'""")[0][0]
        with_graph = q("SELECT count(*) FROM device_activities WHERE graph_id IS NOT NULL")[0][0]
        with_node = q("SELECT count(*) FROM device_activities WHERE graph_node_id IS NOT NULL")[0][0]
        linked = q("""SELECT s.value, count(*) FROM device_activities d JOIN ops o ON o.id = d.captured_op_id
                      JOIN strings s ON s.id = o.name_id GROUP BY s.value ORDER BY 2 DESC""")
        print("device activities per op (top 12):")
        for name, op_name, n in q("""SELECT k.value, s.value, count(*) FROM device_activities d
                                     JOIN strings k ON k.id = d.name_id
                                     LEFT JOIN ops o ON o.id = d.op_id LEFT JOIN strings s ON s.id = o.name_id
                                     GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 12"""):
            print(f"  {n:4d}  {name[:70]:70s} -> {op_name}")
        print(f"SUMMARY CUDA graph ops: {captures} capture (holding {captured_ops} captured ops), {replays} replay "
              f"ops (expected 1 and {REPLAYS})")
        print(f"SUMMARY CUDA graph replays' kernels recorded and linked to the replay ops: {on_replay} "
              f"({'yes' if on_replay else 'NO'}); {meta.get('gpu.activities', '?')} device activities in all, "
              f"{meta.get('gpu.unlinked', '?')} unlinked")
        print(f"SUMMARY CUDA graph ids in the Kineto trace: {with_graph} activities with a graph id, {with_node} with "
              f"a graph node id ({'this Kineto writes them' if with_node else 'this Kineto writes none'})")
        print(f"SUMMARY CUDA graph kernels linked to captured ops: "
              f"{sum(n for _, n in linked)} ({', '.join(f'{n} to {name}' for name, n in linked) or 'none'}); "
              f"captured launches {meta.get('gpu.graph.captured_launches', '-')}, replays matched "
              f"{meta.get('gpu.graph.replays_matched', '-')}, unmatched {meta.get('gpu.graph.replays_unmatched', '-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
