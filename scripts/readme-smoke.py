#!/usr/bin/env python3
"""Runs the README's "run it on the bundled example vault" command exactly as the README spells it
(read from README.md, so the two cannot drift), speaks MCP to it over stdio like a client would,
and checks that kb_search answers with results. Exits non-zero with one line on any failure."""
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"readme-smoke: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    m = re.search(r"^(cargo run [^\n]*--stdio[^\n]*)$", readme, re.M)
    if not m:
        fail("README.md has no `cargo run ... --stdio ...` command")
    command = m.group(1).strip()
    print(f"readme-smoke: {command}")
    proc = subprocess.Popen(command, shell=True, cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    next_id = 0

    def request(method, params):
        nonlocal next_id
        next_id += 1
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method,
                                     "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                fail(f"the server closed stdout before answering {method}")
            msg = json.loads(line)
            if msg.get("id") == next_id:
                return msg

    try:
        init = request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "readme-smoke", "version": "1"}})
        if "result" not in init:
            fail(f"initialize failed: {init}")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.flush()
        deadline = time.time() + 120
        while True:
            r = request("tools/call", {"name": "kb_search", "arguments": {"query": "compaction"}})
            if r.get("error", {}).get("code") == -32006 and time.time() < deadline:
                time.sleep(0.2)  # still indexing
                continue
            break
        if "error" in r:
            fail(f"kb_search failed: {r['error']}")
        results = r["result"]["structuredContent"]["results"]
        if not results:
            fail("kb_search found nothing for 'compaction' in the example vault")
        print(f"readme-smoke: kb_search answered {len(results)} results, first {results[0]['page_path']}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("the server did not exit when its stdin closed")


if __name__ == "__main__":
    main()
