#!/usr/bin/env python3
"""Score kb_search relevance against a judged query set (issue #14, item 4): top-1, top-3, MRR.

Usage (the mcp SDK comes from the client tests' venv):

    PY=tests/clients/python/.venv/bin/python
    $PY scripts/bench/relevance/score.py --vault examples/vault --set scripts/bench/relevance/examples.json
    $PY scripts/bench/relevance/score.py --generate 1000 --seed 1          # generated vault + planted set
    $PY scripts/bench/relevance/score.py --vault /tmp/vaults/logseq-docs --set /tmp/relevance/logseq.json --json out.json

A judged set is a JSON list of {"query": "...", "relevant": ["path/of/note.md", ...]}: the notes a
person means by the query, best first; paths are relative to the vault root.

The judged sets beside this script:

- examples.json: keyword queries over examples/vault (title, partial title, alias, inflection, ...).
- questions-examples.json (over examples/vault) and questions-planted.json (with --generate N
  --seed S, over planted.py's notes): questions as an agent asks them, in sentences and in words of
  their own (issue #33). Kinds: "question" (short), "question-long" (ten words or more),
  "question-paraphrase" (no content word shared with the meant note, its title or frontmatter).
  For example `score.py --generate 1000 --seed 1 --set scripts/bench/relevance/questions-planted.json`.
- public/obsidian-help.json, public/logseq-docs.json, public/foam-docs.json: about 30 questions
  each over the public vaults that `scripts/vaults/measure.py fetch DEST` lays out as
  DEST/obsidian-help, DEST/logseq-docs and DEST/foam-docs (questions and note paths only; nothing
  of the vaults is copied here). The first four of obsidian-help.json are issue #33's examples.

The vault is copied to a temporary directory (the server writes .pkm/ inside it), indexed with
`stratum-mcp index --vault`, then served with `stratum-mcp --stdio --watch off` and queried
through the MCP Python SDK. Each query runs through kb_search with limit 10 (`--limit`); the
results (blocks) become distinct page paths in rank order. Per query:

- top-1: the first page is one of the relevant notes;
- top-3: one of the first three pages is relevant;
- reciprocal rank: 1 / (page rank of the first relevant page), 0 when it is not among the pages
  of the first `--limit` results.

MRR is the mean reciprocal rank. A miss is a query whose first page is none of the relevant notes
— listed worst first with what came first, and where the meant note (relevant[0]) ranks in a
deeper search (`--depth` results, default 200) so a ranking change can be judged by how far it
moved. Queries whose first page is relevant but not the meant note are listed after the misses.
A set's entries may carry a "kind" (title, inflection, two-blocks, ...): scores per kind follow.

With `--generate N --seed S` the vault is made by scripts/bench/gen_vault.py (pseudo-word notes)
and the ~30 English notes of planted.py are written into it; the judged set is planted.py's
(pass --set to score a different one, or --write-set FILE to save it).

Exit status: 0 when the set was scored (and met --min-top3 / --min-mrr when given), 1 below a
threshold, 2 on a usage or server error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
DEFAULT_BIN = REPO_ROOT / "target" / "release" / "stratum-mcp"
GEN_VAULT = REPO_ROOT / "scripts" / "bench" / "gen_vault.py"

sys.path.insert(0, str(HERE))


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def norm_path(p: str) -> str:
    p = p.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return nfc(p)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_set(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("queries", [])
    out = []
    for i, item in enumerate(data):
        q, rel = item.get("query"), item.get("relevant")
        if not isinstance(q, str) or not q.strip() or not isinstance(rel, list) or not rel:
            raise ValueError(f"{path}: entry {i} needs a query and a non-empty relevant list")
        out.append({"query": q, "relevant": [norm_path(r) for r in rel], **({"kind": item["kind"]} if "kind" in item else {})})
    return out


def copy_vault(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".pkm", ".git"), symlinks=False)


def generate_vault(dest: Path, notes: int, seed: int) -> list[dict[str, Any]]:
    import planted

    dest.mkdir(parents=True)
    subprocess.run([sys.executable, str(GEN_VAULT), str(dest), "--notes", str(notes), "--seed", str(seed)],
                   check=True, stdout=subprocess.DEVNULL)
    (dest / "queries.txt").unlink(missing_ok=True)
    return planted.plant(dest)


def run_index(binary: Path, vault: Path) -> float:
    started = time.monotonic()
    proc = subprocess.run([str(binary), "index", "--vault", str(vault)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"stratum-mcp index exited {proc.returncode}: {(proc.stdout + proc.stderr).strip()[-300:]}")
    return time.monotonic() - started


async def call(client: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    if result.is_error:
        text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
        raise RuntimeError(f"{name} failed: {text[:200]}")
    structured = result.structured_content
    if not isinstance(structured, dict) and result.content and hasattr(result.content[0], "text"):
        structured = json.loads(result.content[0].text)
    return structured if isinstance(structured, dict) else {}


def distinct_pages(results: list[dict[str, Any]]) -> list[str]:
    pages: list[str] = []
    for r in results:
        p = norm_path(str(r.get("page_path", "")))
        if p not in pages:
            pages.append(p)
    return pages


async def score_queries(binary: Path, vault: Path, judged: list[dict[str, Any]], limit: int, depth: int) -> list[dict[str, Any]]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    # The SDK starts the server with a small default environment; CI's coverage profile path
    # (LLVM_PROFILE_FILE) must get through.
    profile = {k: v for k, v in os.environ.items() if k == "LLVM_PROFILE_FILE"}
    params = StdioServerParameters(
        command=str(binary), args=["--stdio", "--vault", str(vault), "--watch", "off"], env=profile or None
    )
    rows = []
    with open(vault.parent / "server.stderr", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            for _ in range(600):
                info = await call(client, "kb_vault_info", {})
                if info.get("index_fresh"):
                    break
                await asyncio.sleep(0.1)
            for item in judged:
                res = await call(client, "kb_search", {"query": item["query"], "limit": limit})
                results = res.get("results", [])
                pages = distinct_pages(results)
                rel = item["relevant"]
                rank = next((i + 1 for i, p in enumerate(pages) if p in rel), None)
                row: dict[str, Any] = {
                    "query": item["query"],
                    "meant": rel[0],
                    "relevant": rel,
                    "pages": pages,
                    "first_snippet": (results[0].get("snippet") or results[0].get("content") or "")[:160] if results else "",
                    "total": res.get("total"),
                    "rank": rank,
                    "rr": 1.0 / rank if rank else 0.0,
                    "top1": rank == 1,
                    "top3": bool(rank and rank <= 3),
                }
                if "kind" in item:
                    row["kind"] = item["kind"]
                if pages[:1] != [rel[0]]:
                    # Where the meant note sits in a deeper search: page rank and first block rank.
                    deep = (await call(client, "kb_search", {"query": item["query"], "limit": depth})).get("results", [])
                    deep_pages = distinct_pages(deep)
                    row["meant_page_rank_deep"] = deep_pages.index(rel[0]) + 1 if rel[0] in deep_pages else None
                    row["meant_block_rank_deep"] = next((i + 1 for i, r in enumerate(deep) if norm_path(str(r.get("page_path", ""))) == rel[0]), None)
                rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {
        "queries": n,
        "top1": sum(r["top1"] for r in rows) / n if n else 0.0,
        "top3": sum(r["top3"] for r in rows) / n if n else 0.0,
        "mrr": sum(r["rr"] for r in rows) / n if n else 0.0,
        "no_results": sum(1 for r in rows if not r["pages"]),
    }


def by_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        kinds.setdefault(r.get("kind", "-"), []).append(r)
    return {k: summarize(v) for k, v in kinds.items()}


def markdown(label: str, summary: dict[str, Any], rows: list[dict[str, Any]], max_misses: int) -> str:
    out = [f"### {label}", "", "| Queries | top-1 | top-3 | MRR | no results |", "|---:|---:|---:|---:|---:|",
           f"| {summary['queries']} | {summary['top1']:.1%} | {summary['top3']:.1%} | {summary['mrr']:.3f} | {summary['no_results']} |", ""]
    kinds = by_kind(rows)
    if len(kinds) > 1:
        out += ["| Kind | Queries | top-1 | top-3 | MRR | no results |", "|---|---:|---:|---:|---:|---:|"]
        out += [f"| {k} | {v['queries']} | {v['top1']:.1%} | {v['top3']:.1%} | {v['mrr']:.3f} | {v['no_results']} |" for k, v in kinds.items()]
        out.append("")
    # A miss: the first page is none of the relevant notes. Worst first (no relevant page in the
    # top 10, then by reciprocal rank), set order otherwise.
    misses = sorted((r for r in rows if not r["top1"]), key=lambda r: r["rr"])
    if misses:
        out += [f"Misses ({len(misses)}; first page not relevant), worst first:", "",
                "| Query | First page | Meant note | meant's page rank in top 10 | meant's deep rank (page / block) |", "|---|---|---|---:|---|"]
        for r in misses[:max_misses]:
            first = r["pages"][0] if r["pages"] else "(nothing)"
            deep = f"{r.get('meant_page_rank_deep') or '–'} / {r.get('meant_block_rank_deep') or '–'}"
            rk = r["pages"].index(r["meant"]) + 1 if r["meant"] in r["pages"] else "–"
            out.append(f"| `{r['query']}` | {first} | {r['meant']} | {rk} | {deep} |")
        out.append("")
    near = [r for r in rows if r["top1"] and r["pages"][:1] != [r["meant"]]]
    if near:
        out.append("First page relevant but not the meant note: " + "; ".join(
            f"`{r['query']}` → {r['pages'][0]} (meant {r['meant']}: page {r.get('meant_page_rank_deep') or '–'})" for r in near))
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--vault", type=Path, help="vault directory (copied; never written)")
    src.add_argument("--generate", type=int, metavar="N", help="generate an N-note vault and plant the judged notes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--set", type=Path, help="judged set JSON (default with --generate: the planted set)")
    ap.add_argument("--write-set", type=Path, help="with --generate: write the planted judged set here")
    ap.add_argument("--bin", type=Path, default=DEFAULT_BIN)
    ap.add_argument("--limit", type=int, default=10, help="kb_search limit (results, i.e. blocks)")
    ap.add_argument("--depth", type=int, default=200, help="kb_search limit for locating the meant note of a miss")
    ap.add_argument("--label", help="name in the report")
    ap.add_argument("--json", type=Path, help="write summary and per-query rows here")
    ap.add_argument("--misses", type=int, default=50, help="misses listed in the markdown")
    ap.add_argument("--min-top3", type=float, help="exit 1 when top-3 is below this (0..1)")
    ap.add_argument("--min-mrr", type=float, help="exit 1 when MRR is below this (0..1)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary vault copy")
    a = ap.parse_args()

    if not a.bin.exists():
        log(f"no binary at {a.bin}")
        return 2
    if a.vault and not a.set:
        ap.error("--vault needs --set")
    tmp = Path(tempfile.mkdtemp(prefix="stratum-relevance-"))
    vault = tmp / "vault"
    try:
        if a.vault:
            copy_vault(a.vault, vault)
            label = a.label or str(a.vault)
            judged = load_set(a.set)
        else:
            planted_set = generate_vault(vault, a.generate, a.seed)
            label = a.label or f"generated {a.generate} notes (seed {a.seed}) + planted"
            if a.write_set:
                a.write_set.write_text(json.dumps(planted_set, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            judged = load_set(a.set) if a.set else [{**q, "relevant": [norm_path(r) for r in q["relevant"]]} for q in planted_set]
        missing = sorted({r for q in judged for r in q["relevant"] if not (vault / r).is_file()})
        if missing:
            log(f"judged notes not in the vault: {missing[:10]}")
            return 2
        index_s = run_index(a.bin, vault)
        rows = asyncio.run(score_queries(a.bin, vault, judged, a.limit, a.depth))
    except Exception as e:  # noqa: BLE001 - report and exit 2
        log(f"failed: {type(e).__name__}: {e}")
        return 2
    finally:
        if a.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    summary = summarize(rows)
    summary["index_s"] = round(index_s, 2)
    print(markdown(label, summary, rows, a.misses))
    if a.json:
        a.json.write_text(json.dumps({"label": label, "summary": summary, "rows": rows}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if (a.min_top3 is not None and summary["top3"] < a.min_top3) or (a.min_mrr is not None and summary["mrr"] < a.min_mrr):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
