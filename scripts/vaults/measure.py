#!/usr/bin/env python3
"""Measure stratum-mcp on real public vaults (issue #13): notes, index time, skipped files, and how
its backlinks, link resolution, titles and tags agree with an independent grep-style count.

Usage (the mcp SDK comes from the client tests' venv):

    PY=tests/clients/python/.venv/bin/python
    $PY scripts/vaults/measure.py fetch /tmp/vaults            # the public vaults, markdown only
    $PY scripts/vaults/measure.py /tmp/vaults/obsidian-help /tmp/vaults/logseq-docs ...
    $PY scripts/vaults/measure.py --write docs/vaults.md --json /tmp/vaults.json --examples 10 /tmp/vaults/{obsidian-help,obsidian-help-all,logseq-docs,foam-docs}

`fetch` clones each source repository (or reads a local bare mirror with --mirror DIR, laid out
as DIR/<owner>+<name>/repo) and writes its markdown, .org files and app config into DEST/<name>,
with DEST/sources.json recording repository, commit and dialect. Nothing from the vaults is ever
written into this repository: the report page holds numbers only.

A vault argument is DIR or LABEL=DIR or LABEL:DIALECT=DIR (dialect: obsidian, logseq, foam;
detected from logseq/config.edn, .obsidian/, .foam/ or .vscode/ when not given). Each vault is
copied to a temporary directory (the server writes .pkm/ inside it), indexed with
`stratum-mcp index --vault` (timed), then served with `stratum-mcp --stdio` and queried through
the MCP Python SDK. A vault that fails is reported as failed; the others still run.

The reference ("grep") side is written here, independent of the server; its rules (links,
resolution per dialect, titles, tags) are listed in the report page's last section, which
write_report() below writes out.

Exit status: 0 when every vault was measured, 1 when one failed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import unicodedata
import urllib.parse
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / "target" / "release" / "stratum-mcp"

# The public vaults `fetch` knows: name -> (GitHub repository, folder inside it, dialect).
SOURCES: dict[str, tuple[str, str, str]] = {
    "obsidian-help": ("obsidianmd/obsidian-help", "en", "obsidian"),
    "obsidian-help-all": ("obsidianmd/obsidian-help", "", "obsidian"),
    "logseq-docs": ("logseq/docs", "", "logseq"),
    "foam-docs": ("foambubble/foam", "docs", "foam"),
}
SOURCE_NOTES = {
    "obsidian-help": "the English help vault (the folder en/)",
    "obsidian-help-all": "the whole repository opened as one vault: every language, so many duplicate file names",
    "logseq-docs": "the Logseq docs graph (file-based, :file/name-format :triple-lowbar)",
    "foam-docs": "Foam's documentation workspace (the folder docs/)",
}
# Files `fetch` keeps: notes, Logseq's .org pages (counted by the server as skipped or not) and
# the apps' own config, which decides the dialect.
KEEP_RE = re.compile(
    r"(\.md|\.markdown|\.org)$|(^|/)logseq/config\.edn$|(^|/)\.obsidian/[^/]+\.json$|(^|/)\.foam/|(^|/)\.vscode/settings\.json$",
    re.I,
)

ATTACHMENT_EXTS = {
    "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "bmp", "ico", "tif", "tiff", "heic",
    "pdf", "mp4", "webm", "mov", "mkv", "ogv", "mp3", "wav", "m4a", "ogg", "flac", "3gp",
    "canvas", "base", "excalidraw", "html", "htm", "css", "js", "json", "txt", "csv", "zip",
    "edn", "org", "py", "ts", "xml", "yml", "yaml",
}


def is_attachment(target: str) -> bool:
    name = target.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[-1].lower() in ATTACHMENT_EXTS


def log(msg: str) -> None:
    print(f"measure: {msg}", file=sys.stderr, flush=True)


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def fold(s: str) -> str:
    return nfc(s).casefold()


# --------------------------------------------------------------------------------------------
# fetch: public vaults into DEST/<name>, markdown and config only
# --------------------------------------------------------------------------------------------


def git(args: list[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], check=True, **kw)


def extract_tree(git_dir: Path, rev: str, subdir: str, dest: Path) -> dict[str, int]:
    """Writes the files of rev:subdir that KEEP_RE selects into dest; blobs a partial mirror
    lacks are counted as missing."""
    treeish = f"{rev}:{subdir}" if subdir else rev
    out = git(["--git-dir", str(git_dir), "ls-tree", "-r", "-z", treeish], capture_output=True).stdout
    wanted: list[tuple[str, str]] = []
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, path_b = entry.split(b"\t", 1)
        _mode, kind, oid = meta.decode().split()
        path = path_b.decode("utf-8", "surrogateescape")
        if kind != "blob" or not KEEP_RE.search(path):
            continue
        if any(part.startswith(".") for part in path.split("/")[:-1]) and not re.search(
            r"(^|/)\.(obsidian|foam|vscode)/", path
        ):
            continue  # .github/, .claude/ and the like are no part of a vault
        wanted.append((oid, path))
    stats = {"written": 0, "missing": 0}
    proc = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    for oid, path in wanted:
        proc.stdin.write(oid.encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            stats["missing"] += 1
            continue
        size = int(header[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        stats["written"] += 1
    proc.stdin.close()
    proc.wait()
    return stats


def cmd_fetch(args: argparse.Namespace) -> int:
    dest = Path(args.dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    names = args.only or list(SOURCES)
    index_file = dest / "sources.json"
    sources = json.loads(index_file.read_text()) if index_file.exists() else {}
    clones: dict[str, Path] = {}
    tmp = Path(tempfile.mkdtemp(prefix="vault-clones-"))
    try:
        for name in names:
            repo, subdir, dialect = SOURCES[name]
            git_dir = clones.get(repo)
            if git_dir is None:
                mirror = Path(args.mirror) / repo.replace("/", "+") / "repo" if args.mirror else None
                if mirror and mirror.is_dir():
                    git_dir = mirror
                else:
                    git_dir = tmp / repo.replace("/", "+")
                    log(f"cloning github.com/{repo}")
                    git(["clone", "--quiet", "--bare", "--depth", "1", f"https://github.com/{repo}", str(git_dir)])
                clones[repo] = git_dir
            commit = git(["--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
            date = git(
                ["--git-dir", str(git_dir), "show", "-s", "--format=%cs", commit], capture_output=True, text=True
            ).stdout.strip()
            out = dest / name
            if out.exists():
                shutil.rmtree(out)
            out.mkdir()
            stats = extract_tree(git_dir, commit, subdir, out)
            log(f"{name}: {stats['written']} files from {repo}@{commit[:12]} {subdir or '.'} ({stats['missing']} blobs missing)")
            sources[name] = {
                "repo": repo,
                "subdir": subdir,
                "commit": commit,
                "commit_date": date,
                "dialect": dialect,
                "files": stats["written"],
            }
        index_file.write_text(json.dumps(sources, indent=2) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# --------------------------------------------------------------------------------------------
# The reference side: notes, links, resolution, titles, tags (no server involved)
# --------------------------------------------------------------------------------------------

FENCE_OPEN_RE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(`{3,}|~{3,})(.*)$")
INLINE_CODE_RE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
WIKI_RE = re.compile(r"(!?)\[\[([^\[\]\n]*?)\]\]")
MD_LINK_RE = re.compile(
    r"(!?)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(<[^>\n]*>|[^()\s]+(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]\n]+)\]:\s*(<[^>\n]*>|\S+)", re.M)
LOGSEQ_TAG_RE = re.compile(r"(?:(?<=\s)|^)#(?!\[\[)([^\s#,;!?\"'()\[\]{}<>`]+)", re.M)
LOGSEQ_PROP_RE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?([A-Za-z0-9_\-/?.]+)::(?:[ \t]+(.*))?$")
# Logseq properties whose values are never page references (colors, ids, flags).
LOGSEQ_PLAIN_PROPS = {
    "id", "collapsed", "background-color", "heading", "created-at", "updated-at", "ls-type",
    "hl-type", "hl-page", "hl-color", "hl-stamp", "icon", "public", "filters", "title",
}
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
OBSIDIAN_COMMENT_RE = re.compile(r"%%.*?%%", re.S)
JOURNAL_FILE_RE = re.compile(r"^(\d{4})_(\d{2})_(\d{2})$")


@dataclass
class Link:
    source: str  # vault-relative path of the linking note
    kind: str  # wiki, embed, md, tag
    target: str  # the target as written (without alias/heading for wiki links; the URL for md)
    written: str  # the whole link as written
    line: int


@dataclass
class Note:
    path: str
    text: str
    frontmatter: str | None
    body: str
    props: dict[str, str] = field(default_factory=dict)  # Logseq page properties (first block)
    title: str = ""
    names: list[str] = field(default_factory=list)  # Logseq: page name, then aliases
    tags: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(frontmatter, body, number of lines the frontmatter took)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        return None, text, 0
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return None, text, 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :]), i + 1
    return None, text, 0


def strip_code(text: str, logseq: bool) -> list[str]:
    """The text's lines with fenced code blocks (and Logseq #+BEGIN_SRC/EXAMPLE blocks) blanked
    and inline code spans removed; line numbers are kept."""
    out: list[str] = []
    fence: str | None = None
    org_block: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            stripped = re.sub(r"^[ \t]*(?:[-*+][ \t]+)?", "", line)
            if stripped.startswith(fence) and stripped.strip() == stripped.strip()[0] * len(stripped.strip()):
                fence = None
            out.append("")
            continue
        if org_block is not None:
            if re.match(rf"^[ \t]*(?:-[ \t]+)?#\+END_{org_block}\b", line, re.I):
                org_block = None
            out.append("")
            continue
        m = FENCE_OPEN_RE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            out.append("")
            continue
        if logseq:
            m2 = re.match(r"^[ \t]*(?:-[ \t]+)?#\+BEGIN_(SRC|EXAMPLE)\b", line, re.I)
            if m2:
                org_block = m2.group(1).upper()
                out.append("")
                continue
        out.append(INLINE_CODE_RE.sub(" ", line))
    return out


def yaml_list(frontmatter: str | None, keys: tuple[str, ...]) -> list[str]:
    """Values of a top-level YAML key given as [a, b], a block list, or a scalar "a, b" / "a b"."""
    if not frontmatter:
        return []
    lines = frontmatter.split("\n")
    values: list[str] = []
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Za-z_][\w\-]*)\s*:\s*(.*)$", line)
        if not m or m.group(1).lower() not in keys:
            continue
        rest = m.group(2).strip()
        if rest.startswith("["):
            values += [v for v in (x.strip().strip("'\"") for x in rest.strip("[]").split(",")) if v]
        elif rest and not rest.startswith("#"):
            values += [v for v in re.split(r"[,\s]+", rest.strip("'\"")) if v]
        else:
            for nxt in lines[i + 1 :]:
                m2 = re.match(r"^\s*-\s*(.*)$", nxt)
                if not m2:
                    if nxt.strip() == "":
                        continue
                    break
                v = m2.group(1).strip().strip("'\"")
                if v:
                    values.append(v)
    return [v.lstrip("#") for v in values if v.lstrip("#")]


def yaml_scalar(frontmatter: str | None, key: str) -> str | None:
    if not frontmatter:
        return None
    m = re.search(rf"^{re.escape(key)}\s*:\s*(.+?)\s*$", frontmatter, re.M | re.I)
    if not m:
        return None
    v = m.group(1)
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1]
    return v or None


def logseq_values(value: str) -> list[str]:
    """`a, [[b c]], #d` -> [a, b c, d]."""
    parts: list[str] = []
    for raw in re.findall(r"\[\[[^\]]*\]\]|[^,]+", value):
        v = raw.strip()
        if v.startswith("#"):
            v = v[1:]
        if v.startswith("[[") and v.endswith("]]"):
            v = v[2:-2]
        v = v.strip()
        if v:
            parts.append(v)
    return parts


def ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"


def format_journal_title(date: dt.date, fmt: str) -> str:
    """The few date-fns tokens Logseq's journal title formats use."""
    tokens = {
        "yyyy": lambda d: f"{d.year:04d}",
        "yy": lambda d: f"{d.year % 100:02d}",
        "MMMM": lambda d: d.strftime("%B"),
        "MMM": lambda d: d.strftime("%b"),
        "MM": lambda d: f"{d.month:02d}",
        "M": lambda d: str(d.month),
        "do": lambda d: ordinal(d.day),
        "dd": lambda d: f"{d.day:02d}",
        "d": lambda d: str(d.day),
        "EEEE": lambda d: d.strftime("%A"),
        "EEE": lambda d: d.strftime("%a"),
        "E": lambda d: d.strftime("%a"),
    }
    pattern = re.compile("|".join(sorted(map(re.escape, tokens), key=len, reverse=True)))
    return pattern.sub(lambda m: tokens[m.group(0)](date), fmt)


@dataclass
class LogseqConfig:
    hidden: list[str]
    journal_format: str
    journals_dir: str
    name_format: str


def read_logseq_config(root: Path) -> LogseqConfig:
    cfg = LogseqConfig([], "MMM do, yyyy", "journals", "legacy")
    path = root / "logseq" / "config.edn"
    if not path.exists():
        return cfg
    text = "\n".join(edn_uncomment(line) for line in path.read_text(encoding="utf-8", errors="replace").split("\n"))
    if m := re.search(r":hidden\s+\[([^\]]*)\]", text):
        cfg.hidden = [h.strip("/") for h in re.findall(r'"([^"]*)"', m.group(1))]
    if m := re.search(r':journal/page-title-format\s+"([^"]*)"', text):
        cfg.journal_format = m.group(1)
    if m := re.search(r':journals-directory\s+"([^"]*)"', text):
        cfg.journals_dir = m.group(1).strip("/")
    if m := re.search(r":file/name-format\s+:([\w\-]+)", text):
        cfg.name_format = m.group(1)
    return cfg


def edn_uncomment(line: str) -> str:
    """The line without its `;` comment (a `;` inside a string is kept)."""
    in_string = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        elif ch == ";" and not in_string:
            return line[:i]
    return line


def logseq_file_page_name(stem: str) -> str:
    return urllib.parse.unquote(stem.replace("___", "/"))


class Vault:
    """The reference reading of one vault."""

    def __init__(self, root: Path, dialect: str):
        self.root = root
        self.dialect = dialect
        self.logseq_cfg = read_logseq_config(root) if dialect == "logseq" else None
        self.notes: dict[str, Note] = {}
        self.org_pages: dict[str, str] = {}  # Logseq: folded page name -> .org path (not notes)
        self.md_files_on_disk = 0
        self.ambiguous = 0  # resolutions that needed the closest-candidate rule
        self.attachment_links = 0  # [[file.png]] and the like: left out
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if not path.is_file() or any(p.startswith(".") for p in rel.split("/")):
                continue
            low = rel.lower()
            if low.endswith(".md"):
                self.md_files_on_disk += 1
                if self.is_page(rel):
                    self.notes[nfc(rel)] = self.read_note(path, nfc(rel))
            elif low.endswith(".org") and dialect == "logseq" and self.is_page(rel):
                self.org_pages[fold(self.logseq_default_name(rel[:-4]))] = rel
        self.build_indexes()
        for note in self.notes.values():
            note.links = self.extract_links(note)

    # -- which files are notes ------------------------------------------------------------

    def is_page(self, rel: str) -> bool:
        if self.dialect != "logseq":
            return True
        assert self.logseq_cfg
        if rel.split("/")[0] in ("logseq",):
            return False
        for h in self.logseq_cfg.hidden:
            if h and (rel == h or rel.startswith(h + "/")):
                return False
        return True

    # -- reading ------------------------------------------------------------------------------

    def read_note(self, path: Path, rel: str) -> Note:
        text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        fm, body, _ = split_frontmatter(text)
        note = Note(path=rel, text=text, frontmatter=fm, body=body)
        stem = rel.rsplit("/", 1)[-1][:-3]
        if self.dialect == "logseq":
            note.props = self.logseq_page_props(body)
            title = note.props.get("title") or yaml_scalar(fm, "title")
            note.title = title.strip() if title else self.logseq_default_name(rel[:-3])
            note.names = [note.title]
            for key in ("alias",):
                if key in note.props:
                    note.names += logseq_values(note.props[key])
            note.names += yaml_list(fm, ("alias", "aliases"))
            for line in strip_code(body, True):
                m = LOGSEQ_PROP_RE.match(line)
                if m and m.group(1).lower() == "tags" and m.group(2):
                    note.tags += logseq_values(m.group(2))
            note.tags += yaml_list(fm, ("tags",))
        elif self.dialect == "foam":
            title = yaml_scalar(fm, "title")
            if not title:
                for line in strip_code(body, False):
                    if m := re.match(r"^#[ \t]+(.+?)[ \t#]*$", line):
                        title = m.group(1)
                        break
            note.title = title or stem
            note.tags = yaml_list(fm, ("tags",))
        else:
            note.title = stem
            note.tags = yaml_list(fm, ("tags",))
        note.tags = list(dict.fromkeys(note.tags))
        return note

    def logseq_default_name(self, rel_no_ext: str) -> str:
        assert self.logseq_cfg
        folder, _, stem = rel_no_ext.rpartition("/")
        if folder == self.logseq_cfg.journals_dir and (m := JOURNAL_FILE_RE.match(stem)):
            try:
                date = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                return format_journal_title(date, self.logseq_cfg.journal_format)
            except ValueError:
                pass
        return logseq_file_page_name(stem)

    @staticmethod
    def logseq_page_props(body: str) -> dict[str, str]:
        """The page's properties: the `key:: value` lines before its first other line."""
        props: dict[str, str] = {}
        started = False
        for line in body.split("\n"):
            if not line.strip():
                if started:
                    break
                continue
            m = LOGSEQ_PROP_RE.match(line)
            if not m:
                break
            if started and re.match(r"^[ \t]*-[ \t]", line):
                break  # a second bullet: the next block
            started = True
            props[m.group(1).lower()] = (m.group(2) or "").strip()
        return props

    # -- links ----------------------------------------------------------------------------------

    def extract_links(self, note: Note) -> list[Link]:
        logseq = self.dialect == "logseq"
        text = note.body
        offset = len(note.text.split("\n")) - len(note.body.split("\n"))
        if self.dialect == "obsidian" and note.frontmatter:
            # Obsidian lists links written in properties among a note's backlinks.
            text = note.frontmatter + "\n" + note.body
            offset -= len(note.frontmatter.split("\n"))
        lines = strip_code(text, logseq)
        if self.dialect == "obsidian":
            joined = OBSIDIAN_COMMENT_RE.sub(lambda m: "\n" * m.group(0).count("\n"), "\n".join(lines))
            lines = joined.split("\n")
        links: list[Link] = []
        for i, line in enumerate(lines):
            n = i + offset + 1
            prop = LOGSEQ_PROP_RE.match(line) if logseq else None
            if prop and prop.group(1).lower() == "tags":
                # Logseq reads each comma-separated tags:: value as a page reference.
                for value in logseq_values(prop.group(2) or ""):
                    links.append(Link(note.path, "tags::", value, value, n))
                continue
            for m in WIKI_RE.finditer(line):
                inner = m.group(2)
                if logseq:
                    target = inner.strip()
                else:
                    target = inner.split("|", 1)[0]
                    if target.endswith("\\"):
                        target = target[:-1]
                    target = target.split("#", 1)[0].strip()
                if not target:
                    continue  # [[#Heading]]: a link into the note itself
                if not logseq and is_attachment(target):
                    self.attachment_links += 1
                    continue  # ![[image.png]]: no note
                links.append(Link(note.path, "embed" if m.group(1) else "wiki", target, m.group(0), n))
            for m in MD_LINK_RE.finditer(line):
                url = m.group(2)
                if url.startswith("<"):
                    url = url[1:-1]
                if url.startswith("#") or SCHEME_RE.match(url) or url.startswith("[["):
                    continue
                path_part = re.split(r"[#?]", url, 1)[0]
                if not path_part.lower().endswith(".md"):
                    continue
                links.append(Link(note.path, "md", url, m.group(0), n))
            if logseq and not (prop and prop.group(1).lower() in LOGSEQ_PLAIN_PROPS):
                for m in LOGSEQ_TAG_RE.finditer(line):
                    tag = m.group(1).rstrip(".:*_~")
                    if not tag or tag.startswith("+"):
                        continue
                    links.append(Link(note.path, "tag", tag, "#" + tag, n))
        if self.dialect == "foam":
            for m in REF_DEF_RE.finditer("\n".join(lines)):
                url = m.group(2).strip("<>")
                if SCHEME_RE.match(url) or not re.split(r"[#?]", url, 1)[0].lower().endswith(".md"):
                    continue
                n = "\n".join(lines)[: m.start()].count("\n") + offset + 1
                links.append(Link(note.path, "md", url, m.group(0).strip(), n))
        return links

    # -- resolution ---------------------------------------------------------------------------

    def build_indexes(self) -> None:
        self.by_path: dict[str, str] = {}  # folded path without .md -> note path
        self.by_name: dict[str, list[str]] = defaultdict(list)  # folded file name -> note paths
        self.by_page: dict[str, str] = {}  # Logseq: folded page name -> note path
        for path, note in self.notes.items():
            key = fold(path[:-3])
            self.by_path[key] = path
            self.by_name[key.rsplit("/", 1)[-1]].append(path)
        if self.dialect == "logseq":
            for path, note in self.notes.items():
                self.by_page.setdefault(fold(note.names[0]), path)
            for path, note in self.notes.items():
                for alias in note.names[1:]:
                    self.by_page.setdefault(fold(alias), path)

    def closest(self, candidates: list[str], source: str) -> str:
        if len(candidates) == 1:
            return candidates[0]
        self.ambiguous += 1
        src_dirs = source.split("/")[:-1]

        def key(c: str) -> tuple[int, int, str]:
            dirs = c.split("/")[:-1]
            shared = 0
            for a, b in zip(dirs, src_dirs):
                if a != b:
                    break
                shared += 1
            return (-shared, len(dirs), c)

        return sorted(candidates, key=key)[0]

    def resolve(self, link: Link) -> str | None:
        if self.dialect == "logseq":
            return self.resolve_logseq(link)
        return self.resolve_obsidian(link)

    def resolve_logseq(self, link: Link) -> str | None:
        if link.kind == "md":
            return self.resolve_obsidian(link)
        return self.by_page.get(fold(link.target))

    def resolve_obsidian(self, link: Link) -> str | None:
        target = link.target
        relative_first = link.kind == "md"
        if link.kind == "md":
            target = urllib.parse.unquote(re.split(r"[#?]", target, 1)[0])
        target = target.strip()
        if target.lower().endswith(".md"):
            target = target[:-3]
        elif is_attachment(target):
            return None  # an attachment, not a note
        if not target:
            return None
        src_dir = link.source.rsplit("/", 1)[0] if "/" in link.source else ""
        rel = os.path.normpath(os.path.join(src_dir, target)).replace(os.sep, "/")
        if target.startswith("./") or target.startswith("../"):
            return self.by_path.get(fold(rel))
        if target.startswith("/"):
            return self.by_path.get(fold(target.lstrip("/")))
        key = fold(target)
        for candidate in ([fold(rel), key] if relative_first else [key, fold(rel)]):
            if candidate in self.by_path:
                return self.by_path[candidate]
        if "/" in key:
            matches = [p for k, p in self.by_path.items() if k.endswith("/" + key)]
        else:
            matches = self.by_name.get(key, [])
        return self.closest(sorted(matches), link.source) if matches else None

    def expected_title(self, note: Note) -> str:
        return note.title


# --------------------------------------------------------------------------------------------
# The server side, over stdio with the MCP Python SDK
# --------------------------------------------------------------------------------------------


class CallFailed(Exception):
    pass


class Server:
    def __init__(self, client: Any, timeout: float):
        self.client = client
        self.timeout = timeout
        self.calls = 0
        self.errors: Counter[str] = Counter()
        self.consecutive_failures = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The tool's structuredContent, or None on a tool error (counted); raises CallFailed
        when the server stops answering."""
        import anyio
        from mcp import MCPError

        self.calls += 1
        try:
            with anyio.fail_after(self.timeout):
                result = await self.client.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        except TimeoutError:
            self.errors[f"{name}: timeout"] += 1
            self.consecutive_failures += 1
            if self.consecutive_failures >= 5:
                raise CallFailed(f"{name}: 5 calls in a row timed out") from None
            return None
        except MCPError as e:
            self.errors[f"{name}: {getattr(e, 'code', '?')}"] += 1
            self.consecutive_failures = 0
            return None
        except Exception as e:  # the transport is gone
            raise CallFailed(f"{name}: {type(e).__name__}: {e}") from e
        self.consecutive_failures = 0
        if result.is_error:
            text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
            self.errors[f"{name}: tool error {text[:60]}"] += 1
            return None
        structured = result.structured_content
        if not isinstance(structured, dict) and result.content and hasattr(result.content[0], "text"):
            try:
                structured = json.loads(result.content[0].text)
            except ValueError:
                structured = None
        return structured if isinstance(structured, dict) else None


def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "n/a"


def frac(a: int, b: int) -> str:
    return f"{a} / {b} ({pct(a, b)})" if b else "n/a (none)"


async def serve_and_measure(binary: Path, vault_dir: Path, ref: Vault, timeout: float, result: dict[str, Any]) -> None:
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(binary), args=["--stdio", "--vault", str(vault_dir), "--watch", "off"])
    errlog_path = vault_dir.parent / "server.stderr"
    with open(errlog_path, "w") as errlog:
        started = time.monotonic()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=max(timeout, 60.0)) as client:
            srv = Server(client, timeout)
            info = await srv.call("kb_vault_info", {})
            result["startup_s"] = round(time.monotonic() - started, 3)
            if info is None:
                raise CallFailed("kb_vault_info failed")
            result["page_count"] = info.get("page_count")
            result["block_count"] = info.get("block_count")
            result["index_fresh"] = info.get("index_fresh")
            for _ in range(int(timeout * 10)):
                if info and info.get("index_fresh"):
                    break
                await anyio.sleep(0.1)
                info = await srv.call("kb_vault_info", {})
            result["index_fresh"] = bool(info and info.get("index_fresh"))

            # The server's notes.
            server_pages: dict[str, str] = {}
            cursor = None
            while True:
                args: dict[str, Any] = {"limit": 1000}
                if cursor:
                    args["cursor"] = cursor
                page = await srv.call("kb_list_pages", args)
                if page is None:
                    break
                for p in page.get("pages", []):
                    server_pages[nfc(p["path"])] = p.get("title", "")
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            result["server_pages"] = len(server_pages)
            result["notes_not_served"] = sorted(set(ref.notes) - set(server_pages))[:50]
            result["served_not_notes"] = sorted(set(server_pages) - set(ref.notes))[:50]

            await measure_backlinks(srv, ref, server_pages, result)
            await measure_resolve(srv, ref, result)
            await measure_titles(srv, ref, result)
            await measure_tags(srv, ref, result)
            result["calls"] = srv.calls
            result["call_errors"] = dict(srv.errors.most_common(20))
            result["call_errors_total"] = sum(srv.errors.values())


async def measure_backlinks(srv: Server, ref: Vault, server_pages: dict[str, str], result: dict[str, Any]) -> None:
    grep_in: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))  # dst -> src -> written
    links_to_notes = 0
    unresolved = 0
    for note in ref.notes.values():
        for link in note.links:
            dst = ref.resolve(link)
            if dst is None:
                unresolved += 1
                continue
            links_to_notes += 1
            if dst != note.path:
                grep_in[dst][note.path].append(link.written)
    result["links_total"] = sum(len(n.links) for n in ref.notes.values())
    result["links_by_kind"] = dict(Counter(l.kind for n in ref.notes.values() for l in n.links))
    result["links_to_notes"] = links_to_notes
    result["links_unresolved_by_grep"] = unresolved
    result["ambiguous_resolutions"] = ref.ambiguous
    result["attachment_links"] = ref.attachment_links

    server_in: dict[str, dict[str, str]] = {}
    targets = sorted(set(ref.notes) | set(server_pages))
    for path in targets:
        res = await srv.call("kb_backlinks", {"path": path, "include_unlinked": False})
        sources: dict[str, str] = {}
        for b in (res or {}).get("backlinks", []):
            if b.get("is_linked") and nfc(b["source_page"]) != path:
                sources.setdefault(nfc(b["source_page"]), (b.get("context") or "")[:160])
        server_in[path] = sources

    grep_pairs = {(s, d) for d, srcs in grep_in.items() for s in srcs}
    server_pairs = {(s, d) for d, srcs in server_in.items() for s in srcs}
    with_inbound = {d for d in targets if grep_in.get(d) or server_in.get(d)}
    agree = [d for d in with_inbound if set(grep_in.get(d, {})) == set(server_in.get(d, {}))]
    result["pairs_grep"] = len(grep_pairs)
    result["pairs_server"] = len(server_pairs)
    result["pairs_both"] = len(grep_pairs & server_pairs)
    result["notes_with_inbound_grep"] = sum(1 for d in targets if grep_in.get(d))
    result["notes_with_inbound_server"] = sum(1 for d in targets if server_in.get(d))
    result["notes_with_inbound_either"] = len(with_inbound)
    result["backlink_sets_agree"] = len(agree)
    disagreements = []
    for d in with_inbound:
        g, s = grep_in.get(d, {}), server_in.get(d, {})
        only_g = sorted(set(g) - set(s))
        only_s = sorted(set(s) - set(g))
        if not only_g and not only_s:
            continue
        disagreements.append(
            {
                "note": d,
                "grep": len(g),
                "server": len(s),
                "grep_only": [{"source": x, "links": g[x][:3]} for x in only_g],
                "server_only": [{"source": x, "context": s[x]} for x in only_s],
            }
        )
    disagreements.sort(key=lambda x: (-(len(x["grep_only"]) + len(x["server_only"])), x["note"]))
    result["backlink_disagreements"] = disagreements


async def measure_resolve(srv: Server, ref: Vault, result: dict[str, Any]) -> None:
    """kb_resolve_link on every distinct target written in the vault: bare, as [[T]], and the
    whole link as written. A target agrees when the server's note is one the reference resolves
    it to from some linking note (a name can resolve differently per linking note)."""
    expected: dict[tuple[str, str], set[str | None]] = defaultdict(set)  # (form, input) -> paths
    for note in ref.notes.values():
        for link in note.links:
            dst = ref.resolve(link)
            if link.kind == "md":
                relative = link.target.startswith(("./", "../"))
                expected[("md-relative" if relative else "md", link.target)].add(dst)
            else:
                expected[("bare", link.target)].add(dst)
                expected[("brackets", f"[[{link.target}]]")].add(dst)
                if link.kind != "tags::" and link.written not in (link.target, f"[[{link.target}]]"):
                    expected[("written", link.written)].add(dst)
    stats: dict[str, Counter[str]] = defaultdict(Counter)
    failures: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (form, text), paths in sorted(expected.items()):
        want = {p for p in paths if p is not None}
        res = await srv.call("kb_resolve_link", {"target": text})
        if res is None:
            stats[form]["error"] += 1
            got = None
        else:
            resolved = res.get("resolved")
            got = nfc(resolved["path"]) if isinstance(resolved, dict) and resolved.get("path") else None
        if want:
            stats[form]["expected"] += 1
            if got in want:
                stats[form]["agree"] += 1
            else:
                stats[form]["wrong" if got else "unresolved"] += 1
                failures[form].append({"input": text, "grep": sorted(want)[:3], "server": got})
        else:
            stats[form]["grep_unresolved"] += 1
            if got:
                stats[form]["server_only"] += 1
    result["resolve"] = {form: dict(c) for form, c in stats.items()}
    result["resolve_failures"] = {form: f for form, f in failures.items()}


async def measure_titles(srv: Server, ref: Vault, result: dict[str, Any]) -> None:
    agree = agree_ci = total = 0
    mismatches = []
    for path, note in sorted(ref.notes.items()):
        page = await srv.call("kb_get_page", {"path": path})
        if page is None:
            continue
        total += 1
        want, got = ref.expected_title(note), page.get("title", "")
        if nfc(got) == nfc(want):
            agree += 1
            agree_ci += 1
        else:
            if fold(got) == fold(want):
                agree_ci += 1
            mismatches.append({"note": path, "app": want, "server": got})
    result["titles"] = {"total": total, "agree": agree, "agree_ignoring_case": agree_ci}
    result["title_mismatches"] = mismatches


async def measure_tags(srv: Server, ref: Vault, result: dict[str, Any]) -> None:
    found_by_tag: dict[str, set[str] | None] = {}
    total = found = 0
    truncated = 0
    misses = []
    for path, note in sorted(ref.notes.items()):
        for tag in note.tags:
            if tag not in found_by_tag:
                # Every page of results, following next_offset (a server without offset sends null).
                pages_found: set[str] | None = set()
                seen = 0
                args: dict[str, Any] = {"tag": tag, "limit": 1000}
                for _ in range(50):
                    res = await srv.call("kb_search_by_tag", args)
                    if res is None:
                        pages_found = None if not seen else pages_found
                        break
                    assert pages_found is not None
                    pages_found |= {nfc(r["page_path"]) for r in res.get("results", [])}
                    seen += len(res.get("results", []))
                    nxt = res.get("next_offset")
                    if nxt is None or not res.get("results"):
                        if res.get("total", 0) > seen:
                            truncated += 1  # more results than returned, and no way to ask for them
                        break
                    args = {"tag": tag, "limit": 1000, "offset": nxt}
                found_by_tag[tag] = pages_found
            total += 1
            pages = found_by_tag[tag]
            if pages is not None and path in pages:
                found += 1
            else:
                misses.append({"note": path, "tag": tag})
    result["tags"] = {"total": total, "found": found, "distinct_tags": len(found_by_tag), "truncated_tags": truncated}
    result["tag_misses"] = misses


# --------------------------------------------------------------------------------------------
# One vault, end to end
# --------------------------------------------------------------------------------------------


def detect_dialect(root: Path) -> str:
    if (root / "logseq" / "config.edn").exists():
        return "logseq"
    if (root / ".obsidian").is_dir():
        return "obsidian"
    if (root / ".foam").is_dir():
        return "foam"
    settings = root / ".vscode" / "settings.json"
    if settings.exists() and "foam" in settings.read_text(errors="replace").lower():
        return "foam"
    return "obsidian"


def source_info(root: Path) -> dict[str, Any]:
    index_file = root.parent / "sources.json"
    if index_file.exists():
        try:
            return json.loads(index_file.read_text()).get(root.name, {})
        except ValueError:
            return {}
    return {}


def run_index(binary: Path, vault: Path, timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    proc = subprocess.run(
        [str(binary), "index", "--vault", str(vault)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    elapsed = time.monotonic() - started
    out = proc.stdout + proc.stderr
    m = re.search(r"indexed (\d+) notes in ([\d.]+)s: (\d+) updated, (\d+) removed, (\d+) skipped", out)
    skipped_lines = re.findall(r"^skipped (.*)$", out, re.M)
    if proc.returncode != 0:
        raise RuntimeError(f"stratum-mcp index exited {proc.returncode}: {out.strip()[-300:]}")
    return {
        "index_wall_s": round(elapsed, 3),
        "index_reported_notes": int(m.group(1)) if m else None,
        "index_reported_s": float(m.group(2)) if m else None,
        "skipped": int(m.group(5)) if m else None,
        "skipped_reasons": dict(Counter(re.sub(r"^.*?: ", "", s) for s in skipped_lines)),
    }


def measure_vault(binary: Path, label: str, root: Path, dialect: str | None, timeout: float, keep: bool) -> dict[str, Any]:
    import anyio

    result: dict[str, Any] = {"label": label, "dir": str(root)}
    started = time.monotonic()
    try:
        source = source_info(root)
        result["source"] = source
        dialect = dialect or source.get("dialect") or detect_dialect(root)
        result["dialect"] = dialect
        files = Counter(p.suffix.lower() or "(none)" for p in root.rglob("*") if p.is_file() and ".pkm" not in p.parts)
        result["org_files"] = files.get(".org", 0)
        tmp = Path(tempfile.mkdtemp(prefix=f"measure-{label}-"))
        try:
            vault = tmp / "vault"
            shutil.copytree(root, vault, ignore=shutil.ignore_patterns(".pkm"), symlinks=True)
            if dialect == "obsidian":
                # Obsidian creates .obsidian/ in a folder it opens; public vaults leave it out of git.
                (vault / ".obsidian").mkdir(exist_ok=True)
            ref = Vault(vault, dialect)
            result["md_files"] = ref.md_files_on_disk
            result["notes_grep"] = len(ref.notes)
            result.update(run_index(binary, vault, timeout=max(600.0, timeout)))
            anyio.run(serve_and_measure, binary, vault, ref, timeout, result)
        finally:
            if keep:
                log(f"{label}: kept {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    except BaseException as e:  # noqa: BLE001 - one vault failing must not stop the others
        if isinstance(e, KeyboardInterrupt):
            raise
        inner = e
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        result["error"] = f"{type(inner).__name__}: {inner}"
        result["traceback"] = traceback.format_exc()[-2000:]
        log(f"{label}: FAILED: {result['error']}")
    result["measure_s"] = round(time.monotonic() - started, 1)
    return result


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

def rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    """Every measure in one fixed order ("–" where it does not apply), so that vaults line up."""
    if "error" in r and "pairs_grep" not in r:
        return [("Result", f"failed: {r['error']}")]
    na = "–"
    out: list[tuple[str, str]] = []
    out.append(("Dialect (reference rules)", r.get("dialect", "?")))
    out.append((".md files / notes by the app's rules", f"{r.get('md_files')} / {r.get('notes_grep')}"))
    out.append(("Notes (kb_vault_info page_count)", str(r.get("page_count"))))
    out.append(("Cold index (`stratum-mcp index`), s", f"{r.get('index_wall_s')}"))
    skipped = r.get("skipped")
    reasons = r.get("skipped_reasons") or {}
    out.append(("Files skipped by the index", f"{skipped}" + (f" ({', '.join(f'{v} {k}' for k, v in reasons.items())})" if reasons else "")))
    out.append((".org files in the vault (no notes here)", str(r.get("org_files") or 0)))
    kinds = r.get("links_by_kind", {})
    out.append(("Links counted by grep", f"{r.get('links_total')} ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))})"))
    out.append(("… to a note / to none", f"{r.get('links_to_notes')} / {r.get('links_unresolved_by_grep')}"))
    out.append(("… to one of several same-named notes (closest rule)", str(r.get("ambiguous_resolutions") or 0)))
    out.append(("Links to attachments (left out)", str(r.get("attachment_links") or 0)))
    out.append(("Linking pairs: grep / kb_backlinks / both", f"{r.get('pairs_grep')} / {r.get('pairs_server')} / {r.get('pairs_both')}"))
    out.append(("Notes with inbound links: grep / kb_backlinks", f"{r.get('notes_with_inbound_grep')} / {r.get('notes_with_inbound_server')}"))
    out.append(("**Backlink sets equal** (notes with inbound links on either side)", frac(r.get("backlink_sets_agree", 0), r.get("notes_with_inbound_either", 0))))
    names = {
        "bare": "**kb_resolve_link**, wiki-link target, bare",
        "brackets": "**kb_resolve_link**, as `[[target]]`",
        "written": "**kb_resolve_link**, whole link as written (embed, heading, alias, `#tag`)",
        "md": "**kb_resolve_link**, markdown-link target as written (%-encoded)",
        "md-relative": "**kb_resolve_link**, relative markdown-link target (`./`, `../`; depends on the linking note)",
    }
    for form, name in names.items():
        st = (r.get("resolve") or {}).get(form)
        if not st or not st.get("expected"):
            out.append((name, na))
            continue
        out.append((name, frac(st.get("agree", 0), st.get("expected", 0))
                    + f"; {st.get('wrong', 0)} other note, {st.get('unresolved', 0)} unresolved"))
    st = (r.get("resolve") or {}).get("bare", {})
    out.append(("Wiki-link targets grep finds no note for: resolved by the server",
                frac(st.get("server_only", 0), st.get("grep_unresolved", 0)) if st.get("grep_unresolved") else na))
    t = r.get("titles") or {}
    title = frac(t.get("agree", 0), t.get("total", 0)) if t.get("total") else na
    if t.get("total") and t.get("agree_ignoring_case") != t.get("agree"):
        title += f" ({pct(t.get('agree_ignoring_case', 0), t.get('total', 0))} ignoring case)"
    out.append(("**Titles** as the app shows them = kb_get_page title", title))
    g = r.get("tags") or {}
    out.append(("**Tags** (`tags::` / frontmatter) found by kb_search_by_tag", frac(g.get("found", 0), g.get("total", 0)) if g.get("total") else na))
    out.append(("… distinct tags / results cut short (total > results returned, no next_offset)", f"{g.get('distinct_tags', 0)} / {g.get('truncated_tags', 0)}" if g.get("total") else na))
    out.append(("Tool calls (errors)", f"{r.get('calls')} ({r.get('call_errors_total', 0)})"))
    out.append(("Server start to first answer, s", str(r.get("startup_s"))))
    if "error" in r:
        out.append(("Result", f"failed part-way: {r['error']}"))
    return out


def markdown_table(r: dict[str, Any]) -> str:
    lines = [f"### {r['label']}", ""]
    src = r.get("source") or {}
    if src:
        lines.append(f"{src.get('repo')}@{str(src.get('commit'))[:12]} `{src.get('subdir') or '.'}` ({src.get('commit_date')})")
        lines.append("")
    lines += ["| Measure | Value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows(r)]
    return "\n".join(lines)


def examples(r: dict[str, Any], n: int) -> str:
    out = [f"#### {r['label']}: examples (not for the docs: they name notes)"]
    dis = r.get("backlink_disagreements") or []
    out.append(f"Backlink disagreements: {len(dis)} notes")
    for d in dis[:n]:
        out.append(f"- {d['note']}: grep {d['grep']} linking notes, server {d['server']}")
        for g in d["grep_only"][:3]:
            out.append(f"    grep only: {g['source']}  {' '.join(g['links'])}")
        if len(d["grep_only"]) > 3:
            out.append(f"    … {len(d['grep_only']) - 3} more grep only")
        for s in d["server_only"][:3]:
            out.append(f"    server only: {s['source']}  «{s['context'][:100]}»")
        if len(d["server_only"]) > 3:
            out.append(f"    … {len(d['server_only']) - 3} more server only")
    for form, fails in (r.get("resolve_failures") or {}).items():
        out.append(f"kb_resolve_link failures ({form}): {len(fails)}")
        for f in fails[:n]:
            out.append(f"- {f['input']!r}: grep {f['grep']}, server {f['server']}")
    tm = r.get("title_mismatches") or []
    out.append(f"Title mismatches: {len(tm)}")
    for t in tm[:n]:
        out.append(f"- {t['note']}: app {t['app']!r}, server {t['server']!r}")
    mm = r.get("tag_misses") or []
    out.append(f"Tag misses: {len(mm)}")
    for t in mm[:n]:
        out.append(f"- {t['note']}: {t['tag']!r}")
    if r.get("notes_not_served"):
        out.append(f"Notes by the app's rules the server does not list (first 10): {r['notes_not_served'][:10]}")
    if r.get("served_not_notes"):
        out.append(f"Served pages that are no notes by the app's rules (first 10): {r['served_not_notes'][:10]}")
    if r.get("call_errors"):
        out.append(f"Call errors: {r['call_errors']}")
    return "\n".join(out)


def binary_version(binary: Path) -> str:
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001
        return "?"


def write_report(path: Path, results: list[dict[str, Any]], binary: Path, argv: list[str]) -> None:
    today = dt.date.today().isoformat()
    labels = [r["label"] for r in results]
    table_rows: dict[str, dict[str, str]] = defaultdict(dict)
    order: list[str] = []
    for r in results:
        for k, v in rows(r):
            if k not in order:
                order.append(k)
            table_rows[k][r["label"]] = v
    lines = [
        "# Real vaults",
        "",
        "How stratum-mcp does on public vaults nobody here wrote (issue #13): notes, cold index time,",
        "and how its backlinks, link resolution, titles and tags agree with an independent grep-style",
        "reading of each vault by the rules of the app that wrote it. Produced by",
        "`scripts/vaults/measure.py`; the vaults are fetched at run time and none of their text is",
        "kept here, only these numbers.",
        "",
        "## Rerun",
        "",
        "```sh",
        "cargo build --release -p pkm-mcp",
        "PY=tests/clients/python/.venv/bin/python          # has the mcp SDK (scripts/client-tests.sh sets it up)",
        "$PY scripts/vaults/measure.py fetch /tmp/vaults    # clones the repositories below, keeps markdown and config",
        f"$PY scripts/vaults/measure.py --write docs/vaults.md {' '.join('/tmp/vaults/' + Path(r['dir']).name for r in results)}",
        "```",
        "",
        "## Run",
        "",
        f"- Date: {today}",
        f"- Binary: `{binary_version(binary)}`",
        f"- Machine: {platform.system()} {platform.release()}, {os.cpu_count()} logical cores",
        "",
        "| Vault | Source | Commit | |",
        "|---|---|---|---|",
    ]
    for r in results:
        src = r.get("source") or {}
        repo = src.get("repo")
        where = f"[{repo}](https://github.com/{repo})" + (f" `{src.get('subdir')}/`" if src.get("subdir") else "") if repo else "(local)"
        commit = f"`{str(src.get('commit'))[:12]}` ({src.get('commit_date')})" if src.get("commit") else "?"
        lines.append(f"| {r['label']} | {where} | {commit} | {SOURCE_NOTES.get(Path(r['dir']).name, '')} |")
    lines += ["", "## Results", ""]
    lines.append("| Measure | " + " | ".join(labels) + " |")
    lines.append("|---|" + "---:|" * len(labels))
    for k in order:
        lines.append(f"| {k} | " + " | ".join(table_rows[k].get(l, "") for l in labels) + " |")
    lines += [
        "",
        "## How the reference reads a vault",
        "",
        "- Links: `[[…]]` and `![[…]]` and markdown links to `.md` files, outside fenced code and",
        "  inline code. Obsidian: also links in frontmatter properties (Obsidian lists them among",
        "  backlinks), not in `%%comments%%`; links to attachments are left out. Logseq: also `#tag`",
        "  and `#[[tag]]`, and each comma-separated `tags::` value (Logseq reads them as page",
        "  references); `#+BEGIN_SRC`/`#+BEGIN_EXAMPLE` blocks are code. Foam: also link reference",
        "  definitions to `.md` files. Links into the note itself are left out on both sides.",
        "- Obsidian and Foam resolution: the exact vault path (markdown links: relative to the linking",
        "  note first), else the one note with that file name (or path suffix), else of several the one",
        "  closest to the linking note (longest shared folder prefix, then shortest path);",
        "  case-insensitive. Frontmatter `aliases` do not resolve links (Obsidian writes a link to an",
        "  alias as `[[Note|alias]]`).",
        "- Logseq resolution: the page name is the `title::` property, else the file name with `___`",
        "  read as `/` and %-decoded; journals are named by the graph's `:journal/page-title-format`",
        "  (default `MMM do, yyyy`, e.g. `Dec 3rd, 2026`); `alias::` names resolve to their page; files",
        "  under `logseq/` and in `config.edn`'s `:hidden` are no pages; `.org` pages are no notes",
        "  here; case-insensitive.",
        "- Backlink sets: for every note with inbound links on either side, the notes linking to it by",
        "  the reference against `kb_backlinks` (`include_unlinked: false`, `is_linked` entries).",
        "- `kb_resolve_link`: every distinct target written in the vault, bare, as `[[target]]`, and",
        "  the whole link as written (embed mark, heading, alias, `#tag`); markdown-link targets as",
        "  written. It agrees when it names a note the reference resolves that target to from some",
        "  linking note (with duplicate names a bare target can name several).",
        "- Titles as the app shows them: Obsidian the file name; Logseq the page name above; Foam the",
        "  frontmatter `title`, else the first `# ` heading, else the file name.",
        "- Tags: every `tags::` value (Logseq) and frontmatter `tags` entry, searched with",
        "  `kb_search_by_tag` (limit 1000, following `next_offset`); it agrees when the note is among",
        "  the results.",
        "",
    ]
    path.write_text("\n".join(lines))
    log(f"wrote {path}")


def parse_vault_arg(arg: str) -> tuple[str, str | None, Path]:
    label, dialect, path = None, None, arg
    if "=" in arg and not Path(arg).exists():
        head, path = arg.split("=", 1)
        label, _, dialect = head.partition(":")
        dialect = dialect or None
    p = Path(path).resolve()
    return label or p.name, dialect, p


def cmd_measure(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        import anyio  # noqa: F401
        import mcp  # noqa: F401
    except ImportError:
        log("the mcp SDK is missing: run with tests/clients/python/.venv/bin/python")
        return 2
    binary = Path(args.bin).resolve()
    if not binary.is_file():
        log(f"no binary at {binary}: cargo build --release -p pkm-mcp, or pass --bin")
        return 2
    results = []
    for arg in args.vaults:
        label, dialect, root = parse_vault_arg(arg)
        if not root.is_dir():
            results.append({"label": label, "dir": str(root), "error": "not a directory"})
            continue
        log(f"{label}: measuring {root}")
        r = measure_vault(binary, label, root, dialect, args.timeout, args.keep)
        log(f"{label}: done in {r['measure_s']} s")
        results.append(r)
        print(markdown_table(r), flush=True)
        print(flush=True)
        if args.examples:
            print(examples(r, args.examples), flush=True)
            print(flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, ensure_ascii=False, default=str))
        log(f"wrote {args.json}")
    if args.write:
        write_report(Path(args.write), results, binary, argv)
    return 1 if any("error" in r for r in results) else 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "fetch":
        p = argparse.ArgumentParser(prog="measure.py fetch", description="Fetch the public vaults into DEST.")
        p.add_argument("dest")
        p.add_argument("--mirror", help="a folder of bare mirrors, DIR/<owner>+<name>/repo, used instead of cloning")
        p.add_argument("--only", nargs="*", choices=list(SOURCES), help="only these vaults")
        return cmd_fetch(p.parse_args(argv[1:]))
    p = argparse.ArgumentParser(
        prog="measure.py",
        description="Measure stratum-mcp on vaults. `measure.py fetch DEST` fetches the public ones first.",
    )
    p.add_argument("vaults", nargs="+", help="DIR, LABEL=DIR or LABEL:DIALECT=DIR (obsidian, logseq, foam)")
    p.add_argument("--bin", default=os.environ.get("STRATUM_MCP_BIN", str(DEFAULT_BIN)), help="the stratum-mcp binary")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one tool call may take")
    p.add_argument("--write", help="write the report page here (e.g. docs/vaults.md)")
    p.add_argument("--json", help="write every figure and every disagreement here as JSON")
    p.add_argument("--examples", type=int, default=0, help="print the first N disagreements of each kind (names notes)")
    p.add_argument("--keep", action="store_true", help="keep the temporary vault copies")
    return cmd_measure(p.parse_args(argv), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
