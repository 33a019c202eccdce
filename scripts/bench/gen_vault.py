#!/usr/bin/env python3
"""Generate a deterministic synthetic markdown vault for benchmarking stratum-mcp.

Usage: gen_vault.py OUT_DIR --notes N --seed S

Notes average ~2 KB (200 B .. 20 KB), live in nested folders, carry YAML frontmatter (title, tags,
sometimes aliases), headings, nested TODO/DONE bullets, fenced code, inline #tags and [[wiki-links]]
(some aliased, some unresolved), and a few unicode names. Words are drawn from a ~5k-word vocabulary
with Zipf weights (1/rank). OUT_DIR/queries.txt gets 50 fixed queries of 1-3 words.
"""

import argparse
import itertools
import math
import os
import random
import sys

VOCAB_SIZE = 5000
SYLLABLES = [
    "ka", "lo", "mi", "ra", "te", "su", "no", "ve", "zi", "pa", "do", "ri", "che", "lan", "mor",
    "tis", "gra", "fen", "bel", "qua", "stri", "on", "ex", "ul", "ar", "em", "is", "or", "an", "ti",
]
UNICODE_WORDS = ["café", "über", "naïve", "smörgås", "façade", "日本語", "Ελλάδα", "москва", "niño", "crème"]
FOLDERS = ["projects", "areas", "resources", "archive", "journal", "people", "ideas", "reading", "work", "home"]
SUBFOLDERS = ["2023", "2024", "2025", "drafts", "meetings", "notes", "research", "misc", "ref", "old"]
LANGS = ["rust", "python", "bash", "json", "sql"]


def make_vocab(rng):
    """~5k distinct pseudo-words, deterministic for the seed; rank 0 is the most frequent."""
    words, seen = [], set()
    while len(words) < VOCAB_SIZE:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if len(w) >= 3 and w not in seen:
            seen.add(w)
            words.append(w)
    return words


class Gen:
    def __init__(self, rng, vocab):
        self.rng = rng
        self.vocab = vocab
        self.cum = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(vocab))))

    def words(self, k):
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def sentence(self, lo=5, hi=16):
        ws = self.words(self.rng.randint(lo, hi))
        ws[0] = ws[0].capitalize()
        return " ".join(ws) + "."


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--notes", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    vocab = make_vocab(rng)
    g = Gen(rng, vocab)
    n = a.notes

    # Titles and paths first, so links can point at real notes.
    titles, paths, used = [], [], set()
    for i in range(n):
        ws = [w.capitalize() for w in g.words(rng.randint(2, 4))]
        if rng.random() < 0.03:
            ws.insert(rng.randrange(len(ws) + 1), rng.choice(UNICODE_WORDS))
        t = " ".join(ws)
        if t.lower() in used:
            t = f"{t} {i}"
        used.add(t.lower())
        depth = rng.choices((0, 1, 2, 3), weights=(1, 4, 4, 1))[0]
        parts = [rng.choice(FOLDERS)] if depth >= 1 else []
        parts += [rng.choice(SUBFOLDERS) for _ in range(max(0, depth - 1))]
        titles.append(t)
        paths.append(os.path.join(*parts, t + ".md") if parts else t + ".md")

    tag_pool = g.vocab[20:220]
    total = 0
    for i in range(n):
        target = int(min(20000, max(200, rng.lognormvariate(math.log(1400), 0.8))))
        tags = rng.sample(tag_pool, rng.randint(0, 4))
        out = ["---", f'title: "{titles[i]}"', "tags: [" + ", ".join(tags) + "]"]
        if rng.random() < 0.2:
            out.append("aliases: [" + ", ".join(" ".join(g.words(2)) for _ in range(rng.randint(1, 2))) + "]")
        out += ["---", "", f"# {titles[i]}", ""]
        size = sum(len(x) + 1 for x in out)
        while size < target:
            kind = rng.random()
            block = []
            if kind < 0.15:
                block = ["", "#" * rng.randint(2, 4) + " " + " ".join(g.words(rng.randint(1, 4))).capitalize(), ""]
            elif kind < 0.45:
                s = [g.sentence() for _ in range(rng.randint(1, 4))]
                if rng.random() < 0.5:
                    j = rng.randrange(n)
                    link = f"[[{titles[j]}|{' '.join(g.words(2))}]]" if rng.random() < 0.3 else f"[[{titles[j]}]]"
                    s.insert(rng.randrange(len(s) + 1), f"See {link}.")
                if rng.random() < 0.1:
                    s.append(f"Also [[{' '.join(g.words(2)).title()} Missing]].")
                if rng.random() < 0.3:
                    s.append("#" + rng.choice(tag_pool))
                block = [" ".join(s), ""]
            elif kind < 0.8:
                for b in range(rng.randint(1, 6)):
                    ind = "  " * (rng.choices((0, 1, 2), weights=(5, 3, 1))[0] if b else 0)
                    mark = rng.choices(("", "TODO ", "DONE "), weights=(6, 2, 1))[0]
                    line = f"{ind}- {mark}{g.sentence(3, 10)}"
                    if rng.random() < 0.15:
                        line += f" [[{titles[rng.randrange(n)]}]]"
                    if rng.random() < 0.1:
                        line += " #" + rng.choice(tag_pool)
                    block.append(line)
                block.append("")
            else:
                block = ["```" + rng.choice(LANGS)]
                block += ["    " * rng.randint(0, 2) + "_".join(g.words(rng.randint(1, 4))) + "()" for _ in range(rng.randint(1, 6))]
                block += ["```", ""]
            out += block
            size += sum(len(x) + 1 for x in block)
        text = "\n".join(out).rstrip() + "\n"
        full = os.path.join(a.out_dir, paths[i])
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
        total += len(text.encode("utf-8"))

    # Queries: a fixed RNG independent of the note count, head (ranks 10-200) and middle (200-2000).
    qrng = random.Random(a.seed * 7919 + 17)
    queries = []
    for q in range(50):
        k = qrng.randint(1, 3)
        lo, hi = (10, 200) if q % 2 == 0 else (200, 2000)
        queries.append(" ".join(vocab[qrng.randrange(lo, hi)] for _ in range(k)))
    with open(os.path.join(a.out_dir, "queries.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(queries) + "\n")
    print(f"gen_vault: {n} notes, {total / 1e6:.1f} MB, avg {total / max(n, 1):.0f} B -> {a.out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
