#!/usr/bin/env python3
"""CPU per kb_write_page of one or more servers, per thread, in interleaved rounds.

Usage: write_cpu.py N TAG ROUNDS LABEL=BINARY=VAULT [LABEL=BINARY=VAULT ...]

Each server leads its own vault (give each its own copy: a second server on one vault would
follow the first). Every round writes N new notes (TAG names their folder) through each server
in turn, order alternating, and reads each thread's CPU time from /proc before and after; it
prints CPU per write by thread (the writer, Tantivy's segment updater and merger, the file
watcher) and the wall p50. On a busy machine CPU is the figure to compare, not wall time.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402
def threads(pid):
    """Each thread of pid: (name, user + system ticks)."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{t}/stat").read()
        except OSError:
            continue
        name = s[s.index("(")+1:s.rindex(")")]
        f = s[s.rindex(")")+2:].split()
        out[t] = (name, int(f[11]) + int(f[12]))
    return out
def diff(a, b):
    """Ticks per thread name between two threads() readings."""
    d = {}
    for t, (name, v) in b.items():
        d[name] = d.get(name, 0) + v - a.get(t, (name, 0))[1]
    return {k: v for k, v in d.items() if v}
n, tag, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
servers = []
for p in sys.argv[4:]:
    label, c, _ = B.start_labelled(p, "cpu")
    servers.append((label, c, {}, []))
body = "---\ntitle: Bench\ntags: [bench]\n---\n# Bench\n\n- TODO write benchmark note [[x]]\n"
time.sleep(1)
for r in range(rounds):
    for label, c, acc, walls in (servers if r % 2 == 0 else servers[::-1]):
        a = threads(c.proc.pid)
        for i in range(n):
            walls.append(B.timed(lambda: c.call("kb_write_page", {"path": f"cpu-{tag}/r{r}w{i:04d}.md", "content": body + f"\nnote {i}\n"})))
        time.sleep(0.5)
        b = threads(c.proc.pid)
        for k, v in diff(a, b).items():
            acc[k] = acc.get(k, 0) + v
for label, c, acc, walls in servers:
    tot = sum(acc.values())
    print(label, "ms CPU/write", round(tot * 1000 / B.CLK_TCK / (n * rounds), 2), "wall p50", B.pct(walls, 50),
          {k: round(v * 1000 / B.CLK_TCK / (n * rounds), 2) for k, v in sorted(acc.items(), key=lambda x: -x[1])})
    c.close()
