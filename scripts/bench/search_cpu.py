#!/usr/bin/env python3
"""kb_search latency and server CPU per search of one or more servers, in interleaved passes.

Usage: search_cpu.py ROUNDS PASSES LABEL=BINARY=VAULT [LABEL=BINARY=VAULT ...]

Each server leads its own indexed vault holding queries.txt (give each its own copy: `cp -a` an
indexed bench vault; a second server on one vault would follow the first). Every pass runs, server
by server (order alternating), bench.py's ten-word questions and then the keyword queries, ROUNDS
times each, and reads the server's CPU time from /proc before and after. Prints per server and
kind the medians over passes of p50, p95 and CPU per search. On a busy machine CPU is the figure
to compare, not wall time.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402

rounds, passes = int(sys.argv[1]), int(sys.argv[2])
servers = []
for p in sys.argv[3:]:
    label, c, vault = B.start_labelled(p, "search-cpu")
    with open(os.path.join(vault, "queries.txt"), encoding="utf-8") as f:
        queries = [line.strip() for line in f if line.strip()]
    servers.append((label, c, queries, {"q": [], "k": [], "qcpu": [], "kcpu": []}))
time.sleep(1)
for r in range(passes):
    for label, c, queries, acc in (servers if r % 2 == 0 else servers[::-1]):
        for kind, qs in (("q", B.ten_word_questions(queries)), ("k", queries)):
            t0 = B.proc_cpu_ticks(c.proc.pid)
            res = B.search_latencies(c, qs, rounds)
            t1 = B.proc_cpu_ticks(c.proc.pid)
            acc[kind].append(res)
            acc[kind + "cpu"].append((t1 - t0) * 1000 / B.CLK_TCK / res["n"])
for label, c, queries, acc in servers:
    for kind, name in (("q", "questions"), ("k", "keywords ")):
        p50 = statistics.median(x["p50"] for x in acc[kind])
        p95 = statistics.median(x["p95"] for x in acc[kind])
        print(f"{label} {name} p50 {p50:.2f} p95 {p95:.2f} ms (p95 per pass "
              f"{[round(x['p95'], 1) for x in acc[kind]]}), CPU per search "
              f"{statistics.median(acc[kind + 'cpu']):.2f} ms")
    c.close()
