#!/usr/bin/env python3
"""What a cold index produced, in a form two builds can be compared by: the store's rows (block ids
replaced by their page and position, since new ids are random UUID v4) and the answers of 38
kb_search queries (50 results each: block, page, snippet, score), as JSON. Index the same vault
(copies with the same mtimes: `cp -a`) with each binary, dump each, and compare the files with
`cmp`: a change meant to make indexing faster must give the same bytes (issue #32).

Usage: same_results.py BINARY VAULT OUT.json   (VAULT already indexed by BINARY)
"""
import json
import random
import sqlite3
import subprocess
import sys


def main():
    binary, vault, out = sys.argv[1:4]
    db = sqlite3.connect(f"{vault}/.pkm/blocks.db")
    where = {bid: f"{path}#{seq}" for bid, path, seq in db.execute(
        "SELECT b.id, p.path, b.seq FROM blocks b JOIN pages p ON p.id = b.page_id")}

    def norm(v):
        return where.get(v, v) if isinstance(v, str) else v

    # A block's parent and left sibling, and a link's block, as "path#seq" whichever way the
    # store keeps them (by id up to schema version 5, by seq since version 6).
    cols = {c[1] for c in db.execute("PRAGMA table_info(blocks)")}
    if "parent_seq" in cols:
        neighbours = ("CASE WHEN b.parent_seq IS NULL THEN NULL ELSE p.path || '#' || b.parent_seq END, "
                      "CASE WHEN b.left_seq IS NULL THEN NULL ELSE p.path || '#' || b.left_seq END")
    else:
        neighbours = "b.parent_id, b.left_id"
    rest = sorted(cols - {"id", "page_id", "seq", "parent_id", "left_id", "parent_seq", "left_seq"})
    link_cols = {c[1] for c in db.execute("PRAGMA table_info(links)")}
    link_block = "l.block_id" if "block_id" in link_cols else "p.path || '#' || l.seq"
    rows = {
        "pages": sorted(tuple(r[1:]) for r in db.execute("SELECT * FROM pages")),
        "page_aliases": sorted(db.execute(
            "SELECT p.path, a.ord, a.alias, a.alias_key FROM page_aliases a JOIN pages p ON p.id = a.page_id")),
        "page_tags": sorted(db.execute(
            "SELECT p.path, t.tag_key, t.tag, t.ord FROM page_tags t JOIN pages p ON p.id = t.page_id")),
        "blocks": sorted(tuple(norm(v) for v in r) for r in db.execute(
            f"SELECT b.id, b.seq, {neighbours}, " + ", ".join("b." + c for c in rest)
            + ", p.path FROM blocks b JOIN pages p ON p.id = b.page_id")),
        "block_tags": sorted(db.execute(
            "SELECT p.path, t.seq, t.tag_key, t.tag FROM block_tags t JOIN pages p ON p.id = t.page_id")),
        "links": sorted(tuple(norm(v) for v in r) for r in db.execute(
            f"SELECT p.path, l.seq, l.n, {link_block}, l.target, l.target_key, l.alias, l.position, l.embed"
            " FROM links l JOIN pages p ON p.id = l.page_id")),
        "index_lag": sorted(db.execute("SELECT path FROM index_lag")),
    }
    words = sorted({w for (c,) in db.execute("SELECT content FROM blocks WHERE rowid % 997 = 0")
                    for w in c.split() if w.isalpha() and len(w) > 4})
    random.seed(7)
    queries = [" ".join(random.sample(words, k)) for k in (1, 1, 1, 2, 2, 2, 3, 3) for _ in range(4)]
    queries += ["where did I write about " + w for w in random.sample(words, 6)]

    server = subprocess.Popen([binary, "--vault", vault], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    counter = [0]

    def call(method, params, notify=False):
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            counter[0] += 1
            msg["id"] = counter[0]
        server.stdin.write(json.dumps(msg) + "\n")
        server.stdin.flush()
        while not notify:
            line = json.loads(server.stdout.readline())
            if line.get("id") == counter[0]:
                return line
        return None

    call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "same_results", "version": "1"}})
    call("notifications/initialized", {}, notify=True)
    answers = []
    for q in queries:
        r = call("tools/call", {"name": "kb_search", "arguments": {"query": q, "limit": 50}})["result"]
        sc = r.get("structuredContent") or json.loads(r["content"][0]["text"])
        answers.append((q, sc.get("total"), [(norm(x["block_id"]), x["page_path"], x.get("snippet"),
                                               round(x["score"], 5)) for x in sc["results"]]))
    server.stdin.close()
    server.wait()
    rows["search"] = answers
    with open(out, "w") as f:
        json.dump(rows, f, indent=0, default=str)
    print(f"{len(rows['blocks'])} blocks, {len(rows['links'])} links, {len(answers)} queries, "
          f"{sum(len(a[2]) for a in answers)} results")


if __name__ == "__main__":
    main()
