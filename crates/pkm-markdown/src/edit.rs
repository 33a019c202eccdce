//! Edits inside a note: append or prepend (to the note or a section), replace a section's body,
//! replace exact text, replace a block's text. Each edit becomes splices of the text as the edits
//! before it left it; bytes no splice covers stay byte for byte (line endings, byte-order mark,
//! final newline, indentation). Inserted lines take the note's line ending, and in an outline the
//! indentation of where they go. All edits apply, or none: the first refused one is the error.

use std::ops::Range;

use crate::block_parser::{Block, BlockKind, parse_blocks};
use crate::error::MarkdownError;
use crate::frontmatter;
use crate::lines;
use crate::sections::{self, Section, SectionKind, after_break, flatten, last_content_end};
pub use crate::splice::line_ending;

/// One edit of `kb_edit_page`, deserialised as its input schema gives it (`{"op": "append", ...}`;
/// `count` defaults to 1).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EditOp {
    /// At the end of the note, or of the section (in an outline, as its last child).
    Append {
        text: String,
        section: Option<String>,
    },
    /// At the start of the body (after frontmatter or page properties), or right after the
    /// section's heading (in an outline, as its first child).
    Prepend {
        text: String,
        section: Option<String>,
    },
    /// What is under the heading; the heading stays.
    ReplaceSection { section: String, text: String },
    /// Every occurrence of `find` (exact text), which must occur `count` times.
    Replace {
        find: String,
        text: String,
        #[serde(default = "one")]
        count: usize,
    },
    /// The block's own text (after its bullet, up to its properties); its children stay.
    ReplaceBlock { block_id: String, text: String },
}

fn one() -> usize {
    1
}

/// Finds a block by the id the store gave it.
pub trait BlockIds {
    /// The index, in the pre-order list of the blocks of `text` ([`parse_blocks`] from the body's
    /// start), of the block with id `id`, if `text` holds it.
    fn position(&self, text: &str, id: &str) -> Option<usize>;
}

/// Bytes `range` of a text replaced by `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    pub range: Range<usize>,
    pub text: String,
}

/// `text` with `edits` applied in order. `outline`: the vault writes notes as outlines (Logseq),
/// so text added to the note itself becomes a top-level block.
pub fn apply(
    text: &str,
    edits: &[EditOp],
    outline: bool,
    ids: &dyn BlockIds,
) -> Result<String, MarkdownError> {
    let mut current = text.to_owned();
    for (i, edit) in edits.iter().enumerate() {
        let splices = plan(&current, edit, outline, ids).map_err(|e| MarkdownError::InEdit {
            n: i + 1,
            source: Box::new(e),
        })?;
        current = splice(&current, &splices)?;
    }
    Ok(current)
}

/// The splices one edit makes to `text`: sorted, not overlapping.
pub fn plan(
    text: &str,
    edit: &EditOp,
    outline: bool,
    ids: &dyn BlockIds,
) -> Result<Vec<Splice>, MarkdownError> {
    let eol = line_ending(text);
    let top = outline.then_some("");
    Ok(match edit {
        EditOp::Append { text: t, section } => {
            let (at, indent) = match section {
                None => (note_end(text), top.map(str::to_owned)),
                Some(a) => {
                    let s = found(text, a)?;
                    (s.body.end, child_indent(text, &s, outline))
                }
            };
            insertion(text, at, &layout(&trimmed(t, eol), indent.as_deref(), eol))
        }
        EditOp::Prepend { text: t, section } => {
            let (at, indent) = match section {
                None => (body_top(text, outline), top.map(str::to_owned)),
                Some(a) => {
                    let s = found(text, a)?;
                    (s.heading.end, child_indent(text, &s, outline))
                }
            };
            insertion(text, at, &layout(&trimmed(t, eol), indent.as_deref(), eol))
        }
        EditOp::ReplaceSection { section, text: t } => {
            let s = found(text, section)?;
            let body = layout(
                &trimmed(t, eol),
                child_indent(text, &s, outline).as_deref(),
                eol,
            );
            replace_body(text, &s, body)
        }
        EditOp::Replace {
            find,
            text: t,
            count,
        } => replace_text(text, find, &with_eol(t, eol), *count)?,
        EditOp::ReplaceBlock { block_id, text: t } => {
            let at = ids
                .position(text, block_id)
                .ok_or_else(|| MarkdownError::NoBlock(block_id.clone()))?;
            replace_block(text, at, &trimmed(t, eol))
                .ok_or_else(|| MarkdownError::NoBlock(block_id.clone()))?
        }
    })
}

/// `text` with `splices` (sorted, not overlapping) made, through the crate's one span editor
/// (`splice.rs`): a splice outside the text or off a character boundary is an error, never an
/// empty string.
pub fn splice(text: &str, splices: &[Splice]) -> Result<String, MarkdownError> {
    crate::splice::apply(
        text,
        splices
            .iter()
            .map(|s| crate::splice::Edit::replace(s.range.clone().into(), s.text.clone()))
            .collect(),
    )
}

fn found(text: &str, address: &str) -> Result<Section, MarkdownError> {
    let all = sections::sections(text);
    sections::find(text, &all, address).cloned()
}

/// `t` with its `\n`s written as `eol`; text that holds a `\r` already has its own line endings.
fn with_eol(t: &str, eol: &str) -> String {
    if t.contains('\r') || eol == "\n" {
        t.to_owned()
    } else {
        t.replace('\n', eol)
    }
}

/// [`with_eol`] without the line breaks that end `t` (the place it goes supplies one).
fn trimmed(t: &str, eol: &str) -> String {
    with_eol(t.trim_end_matches(['\n', '\r']), eol)
}

/// Where text appended to the note goes: after its last non-blank line.
fn note_end(text: &str) -> usize {
    last_content_end(text, 0, text.len()).max(frontmatter::body_start(text))
}

/// Where text prepended to the note goes: the body's start, after frontmatter and, in an
/// outline, after the page's properties (a first block that holds nothing else).
fn body_top(text: &str, outline: bool) -> usize {
    let start = frontmatter::body_start(text);
    if !outline {
        return start;
    }
    match parse_blocks(text, start).first() {
        Some(b) if !b.properties.is_empty() && b.content.is_empty() && b.children.is_empty() => {
            after_break(text, b.range.end)
        }
        _ => start,
    }
}

/// `body` (no final line break; empty inserts nothing) inserted at `at`, a line's start or the
/// text's end: on a line of its own, which ends with a line break unless it becomes the last
/// line of a note without a final one.
fn insertion(text: &str, at: usize, body: &str) -> Vec<Splice> {
    if body.is_empty() {
        return Vec::new();
    }
    let before = text.get(..at).unwrap_or_default();
    let before = before.strip_prefix('\u{feff}').unwrap_or(before);
    let eol = line_ending(text);
    let s = if !before.is_empty() && !before.ends_with(['\n', '\r']) {
        format!("{eol}{body}")
    } else {
        format!("{body}{eol}")
    };
    vec![Splice {
        range: at..at,
        text: s,
    }]
}

/// The section's body replaced by `body`; the line break that ended the old body ends it.
fn replace_body(text: &str, s: &Section, body: String) -> Vec<Splice> {
    if s.body.is_empty() {
        return insertion(text, s.body.start, &body);
    }
    let old = text.get(s.body.clone()).unwrap_or_default();
    let ending = ["\r\n", "\n", "\r"]
        .into_iter()
        .find(|e| old.ends_with(e))
        .unwrap_or_default();
    let text = if body.is_empty() {
        body
    } else {
        format!("{body}{ending}")
    };
    vec![Splice {
        range: s.body.clone(),
        text,
    }]
}

/// Every occurrence of `find` replaced by `by`, when there are `count`.
fn replace_text(
    text: &str,
    find: &str,
    by: &str,
    count: usize,
) -> Result<Vec<Splice>, MarkdownError> {
    let hits: Vec<usize> = if find.is_empty() {
        Vec::new()
    } else {
        text.match_indices(find).map(|(i, _)| i).collect()
    };
    if hits.len() != count || count == 0 {
        return Err(MarkdownError::FindCount {
            find: find.to_owned(),
            expected: count,
            found: hits.len(),
        });
    }
    Ok(hits
        .into_iter()
        .map(|i| Splice {
            range: i..i + find.len(),
            text: by.to_owned(),
        })
        .collect())
}

/// The own text of block `at` (pre-order) replaced by `by`: after its bullet (or a heading's
/// `#`s) up to its first property line; continuation lines indented as the block's.
fn replace_block(text: &str, at: usize, by: &str) -> Option<Vec<Splice>> {
    let blocks = parse_blocks(text, frontmatter::body_start(text));
    let flat = flatten(&blocks);
    let &(_, _, b) = flat.get(at)?;
    let (range, cont) = own_text(text, b);
    let eol = line_ending(text);
    let mut lines_out = by.split(eol);
    let mut s = lines_out.next().unwrap_or_default().to_owned();
    for l in lines_out {
        s.push_str(eol);
        if !lines::is_blank(l) {
            s.push_str(&cont);
        }
        s.push_str(l);
    }
    Some(vec![Splice { range, text: s }])
}

/// Where a block's own text stands, and the indentation of its continuation lines.
fn own_text(text: &str, b: &Block) -> (Range<usize>, String) {
    let first = text.get(b.range.clone()).unwrap_or_default();
    let first = first.split(['\n', '\r']).next().unwrap_or_default();
    let (cols, ib) = lines::indent(first);
    let after = first.get(ib..).unwrap_or_default();
    let (skip, cont) = match b.kind {
        BlockKind::ListItem => match lines::bullet(after, cols) {
            Some(bl) => {
                let skip = ib + bl.content_offset_bytes.min(after.len());
                let pad = " ".repeat(bl.content_offset_bytes.min(after.len()));
                (
                    skip,
                    format!("{}{pad}", first.get(..ib).unwrap_or_default()),
                )
            }
            None => (ib, String::new()),
        },
        BlockKind::Heading if lines::atx_heading(after).is_some() => {
            let hashes = after.bytes().take_while(|&c| c == b'#').count();
            let ws = after
                .get(hashes..)
                .map_or(0, |r| r.len() - r.trim_start_matches([' ', '\t']).len());
            (ib + hashes + ws, String::new())
        }
        _ => (0, String::new()),
    };
    let start = b.range.start + skip;
    // Property lines after the text stay, and what follows them.
    let end = b
        .property_spans
        .iter()
        .map(|p| line_start(text, p.key.start))
        .filter(|&l| l > start)
        .min()
        .map_or(b.range.end, |l| before_break(text, l))
        .max(start);
    (start..end, cont)
}

fn line_start(text: &str, at: usize) -> usize {
    text.get(..at)
        .and_then(|t| t.rfind(['\n', '\r']))
        .map_or(0, |i| i + 1)
}

/// `at`, a line's start, moved before the line break that ends the line before.
fn before_break(text: &str, at: usize) -> usize {
    let before = text.get(..at).unwrap_or_default();
    if before.ends_with("\r\n") {
        at - 2
    } else if before.ends_with(['\n', '\r']) {
        at - 1
    } else {
        at
    }
}

/// The indentation of a section's children when its lines are an outline's (an outline heading,
/// a list item's anchor, any heading of an outline note): its first child's, else one step past
/// the section's own (the left margin under a markdown heading).
fn child_indent(text: &str, s: &Section, outline: bool) -> Option<String> {
    let item = match s.kind {
        // In an outline, a heading's lines are blocks too (`## Usage\n\t- item`).
        SectionKind::Heading => outline,
        SectionKind::Outline => true,
        SectionKind::Anchor => {
            let line = text.get(s.heading.clone()).unwrap_or_default();
            let (cols, ib) = lines::indent(line);
            lines::bullet(line.get(ib..).unwrap_or_default(), cols).is_some()
        }
    };
    if !item {
        return None;
    }
    let body = text.get(s.body.clone()).unwrap_or_default();
    let first = lines::lines(body, 0)
        .map(|l| body.get(l.start..l.end).unwrap_or_default())
        .find(|l| !lines::is_blank(l));
    match (s.kind, first) {
        // Under a markdown heading, only a body that is an outline already.
        (SectionKind::Heading, Some(l)) => bullet_indent(l).map(str::to_owned),
        (SectionKind::Heading, None) => Some(String::new()),
        (_, Some(l)) => Some(l.get(..lines::indent(l).1).unwrap_or_default().to_owned()),
        (_, None) => Some(format!("{}{}", s.indent, indent_step(text))),
    }
}

/// The indentation of `line` when it is a list item's first line.
fn bullet_indent(line: &str) -> Option<&str> {
    let (cols, ib) = lines::indent(line);
    lines::bullet(line.get(ib..)?, cols)?;
    line.get(..ib)
}

/// One step of the note's outline indentation: a tab, or the spaces its first indented bullet
/// has; a tab when no bullet is indented.
fn indent_step(text: &str) -> String {
    for l in lines::lines(text, 0) {
        let s = text.get(l.start..l.end).unwrap_or_default();
        let (cols, ib) = lines::indent(s);
        if ib > 0 && lines::bullet(s.get(ib..).unwrap_or_default(), cols).is_some() {
            let ws = s.get(..ib).unwrap_or_default();
            return if ws.starts_with('\t') {
                "\t".to_owned()
            } else {
                ws.to_owned()
            };
        }
    }
    "\t".to_owned()
}

/// Lines `t` (line endings `eol`, none at its end) as they go where `indent` says: as they are
/// outside an outline (`None`), and in one as blocks at that indentation. Text whose first line
/// already starts with the indentation is kept as it is (text copied from the note); a first line
/// that is no bullet becomes one, its other lines its continuation.
fn layout(t: &str, indent: Option<&str>, eol: &str) -> String {
    let Some(indent) = indent else {
        return t.to_owned();
    };
    let all: Vec<&str> = t.split(eol).collect();
    let Some(start) = all.iter().position(|l| !lines::is_blank(l)) else {
        return t.to_owned();
    };
    let first = all.get(start).copied().unwrap_or_default();
    if !indent.is_empty() && first.starts_with(indent) {
        return t.to_owned();
    }
    let bulleted = bullet_indent(first).is_some();
    let mut out = Vec::with_capacity(all.len());
    for (i, l) in all.iter().enumerate() {
        out.push(match (i == start, bulleted, lines::is_blank(l)) {
            (_, _, true) => (*l).to_owned(),
            (_, true, false) => format!("{indent}{l}"),
            (true, false, false) => format!("{indent}- {l}"),
            (false, false, false) => format!("{indent}  {l}"),
        });
    }
    out.join(eol)
}
