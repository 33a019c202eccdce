//! A note's sections as people address them: a heading's text, or a path of headings from an
//! outer one down (`"Projects#Q3#Risks"`, as Obsidian writes heading links), or an Obsidian
//! `^block-id`.
//!
//! Built on the block tree ([`crate::block_parser`]), so headings inside code and frontmatter are
//! no headings, setext headings are, and Logseq heading blocks (an item whose text starts with
//! `#`s, or that has `heading:: true`) nest as the outline does. A markdown heading's section runs
//! to the next heading of the same or a higher level; an outline heading's section is its block
//! and the block's children. Every range is a byte range of the note; none holds the blank lines
//! that end a section.

use std::collections::HashMap;
use std::ops::Range;

use crate::block_parser::{Block, BlockKind, parse_blocks};
use crate::error::MarkdownError;
use crate::frontmatter;
use crate::lines;

/// How a section's lines are laid out, which says how lines inserted into it are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionKind {
    /// An ATX or setext heading outside a list.
    Heading,
    /// A list item that is a heading (Logseq): its children are its section.
    Outline,
    /// A block ending with an Obsidian `^block-id`: the block and, for a list item, its children.
    Anchor,
}

/// One addressable section of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading's text as written (`#`s, bullet and closing `#`s removed); `^id` for an anchor.
    pub title: String,
    /// 1–6; an outline heading without `#`s (`heading:: true`) takes its depth in the outline.
    pub level: u8,
    /// The titles from the outermost heading down, joined by `#`; an anchor's is its title. A
    /// title that sibling sections share (the same text under the same heading, or at the top)
    /// carries its place among them, `[1]`, `[2]`…, so every section has a path of its own.
    pub path: String,
    /// [`Section::path`] without those places: the path as a heading link writes it.
    pub plain_path: String,
    pub kind: SectionKind,
    /// Index of the heading's block in the pre-order list of the note's blocks.
    pub block: usize,
    /// The heading's own lines, the line break after them included.
    pub heading: Range<usize>,
    /// What is under the heading: from `heading.end` to the end of the section's last non-blank
    /// line (its line break included); empty when nothing is.
    pub body: Range<usize>,
    /// The indentation of the heading's line (outline and anchor items; empty for headings).
    pub indent: String,
}

impl Section {
    /// The whole section, heading included.
    pub fn range(&self) -> Range<usize> {
        self.heading.start..self.body.end
    }
}

/// Every section of `text`, headings and anchors, in document order.
pub fn sections(text: &str) -> Vec<Section> {
    let blocks = parse_blocks(text, frontmatter::body_start(text));
    let flat = flatten(&blocks);
    let ends = subtree_ends(&flat);
    let heading_ends = heading_ends(text, &flat);
    let mut out: Vec<Section> = Vec::new();
    // For each section, the index in `out` of the heading it is under (none for an anchor: an
    // anchor is addressed alone, and the headings around it keep their paths).
    let mut under: Vec<Option<usize>> = Vec::new();
    // For each block, the index in `out` of its own section or of its nearest ancestor's.
    let mut owner: Vec<Option<usize>> = Vec::with_capacity(flat.len());
    for (i, &(parent, depth, b)) in flat.iter().enumerate() {
        let parent_owner = parent.and_then(|p| owner.get(p).copied().flatten());
        let end = match b.kind {
            BlockKind::Heading => heading_ends.get(i).copied().unwrap_or(text.len()),
            _ => after_break(text, ends.get(i).copied().unwrap_or(0)),
        };
        let found = heading_of(text, i, b, depth, end).or_else(|| anchor_of(text, i, b, end));
        let Some(s) = found else {
            owner.push(parent_owner);
            continue;
        };
        if s.kind == SectionKind::Anchor {
            owner.push(parent_owner);
            under.push(None);
        } else {
            owner.push(Some(out.len()));
            under.push(parent_owner);
        }
        out.push(s);
    }
    name_paths(&mut out, &under);
    out
}

/// Sets each section's paths from its title and the paths of the headings it is under (which
/// come before it); siblings sharing a title are numbered in document order.
fn name_paths(out: &mut [Section], under: &[Option<usize>]) {
    let mut shared: HashMap<(Option<usize>, &str), (usize, usize)> = HashMap::new();
    for (s, up) in out.iter().zip(under) {
        shared.entry((*up, s.title.as_str())).or_default().1 += 1;
    }
    let mut places = Vec::with_capacity(out.len());
    for (s, up) in out.iter().zip(under) {
        let (seen, of) = shared.entry((*up, s.title.as_str())).or_default();
        *seen += 1;
        places.push((*of > 1).then_some(*seen));
    }
    for (i, (up, place)) in under.iter().zip(places).enumerate() {
        let (path, plain) = match up.and_then(|u| out.get(u)) {
            Some(u) => (format!("{}#", u.path), format!("{}#", u.plain_path)),
            None => (String::new(), String::new()),
        };
        if let Some(s) = out.get_mut(i) {
            s.plain_path = plain + &s.title;
            s.path = match place {
                Some(n) => format!("{path}{}[{n}]", s.title),
                None => path + &s.title,
            };
        }
    }
}

/// The blocks in pre-order: (parent's index, depth, block).
pub(crate) fn flatten(blocks: &[Block]) -> Vec<(Option<usize>, usize, &Block)> {
    let mut out = Vec::new();
    let mut stack: Vec<(Option<usize>, usize, &Block)> =
        blocks.iter().rev().map(|b| (None, 0, b)).collect();
    while let Some((parent, depth, block)) = stack.pop() {
        let me = out.len();
        out.push((parent, depth, block));
        stack.extend(
            block
                .children
                .iter()
                .rev()
                .map(|c| (Some(me), depth + 1, c)),
        );
    }
    out
}

/// For each block, where its last own or descendant line ends (without its line break).
fn subtree_ends(flat: &[(Option<usize>, usize, &Block)]) -> Vec<usize> {
    let mut ends: Vec<usize> = flat.iter().map(|(_, _, b)| b.range.end).collect();
    for i in (0..flat.len()).rev() {
        let (Some(p), Some(&end)) = (flat.get(i).and_then(|f| f.0), ends.get(i)) else {
            continue;
        };
        if let Some(e) = ends.get_mut(p) {
            *e = (*e).max(end);
        }
    }
    ends
}

/// For each markdown heading (by pre-order index), where its section ends: at the next heading
/// of the same or a higher level, else at the text's end. One pass, with the open headings on a
/// stack.
fn heading_ends(text: &str, flat: &[(Option<usize>, usize, &Block)]) -> Vec<usize> {
    let mut ends = vec![text.len(); flat.len()];
    let mut open: Vec<(usize, u8)> = Vec::new();
    for (i, (_, _, b)) in flat.iter().enumerate() {
        let (BlockKind::Heading, Some(level)) = (b.kind, b.heading_level) else {
            continue;
        };
        while let Some(&(j, l)) = open.last()
            && l >= level
        {
            if let Some(e) = ends.get_mut(j) {
                *e = b.range.start;
            }
            open.pop();
        }
        open.push((i, level));
    }
    ends
}

/// The section of block `i` when it is a heading; `end` is where the section ends (before its
/// trailing blank lines are set aside).
fn heading_of(text: &str, i: usize, b: &Block, depth: usize, end: usize) -> Option<Section> {
    match b.kind {
        BlockKind::Heading => {
            let level = b.heading_level?;
            let heading = b.range.start..after_break(text, b.range.end);
            let s = section(text, SectionKind::Heading, i, heading, end, level);
            Some(titled(s, heading_title(text, b)))
        }
        BlockKind::ListItem if b.heading_level.is_some() || is_heading_prop(b) => {
            let level = b
                .heading_level
                .unwrap_or_else(|| u8::try_from(depth + 1).unwrap_or(6).min(6));
            let heading = b.range.start..after_break(text, b.range.end);
            let s = section(text, SectionKind::Outline, i, heading, end, level);
            Some(titled(s, item_title(text, b)))
        }
        _ => None,
    }
}

/// The section of block `i` when its last own line ends with an Obsidian `^block-id`.
fn anchor_of(text: &str, i: usize, b: &Block, end: usize) -> Option<Section> {
    if b.kind == BlockKind::Code {
        return None;
    }
    let own = text.get(b.range.clone())?;
    let last = own
        .rsplit(['\n', '\r'])
        .next()?
        .trim_end_matches([' ', '\t']);
    let (before, id) = last.rsplit_once('^')?;
    let valid = !id.is_empty() && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-');
    if !valid || !(before.is_empty() || before.ends_with([' ', '\t'])) {
        return None;
    }
    let heading = b.range.start..after_break(text, b.range.end);
    let s = section(text, SectionKind::Anchor, i, heading, end, 0);
    Some(titled(s, format!("^{id}")))
}

fn section(
    text: &str,
    kind: SectionKind,
    block: usize,
    heading: Range<usize>,
    end: usize,
    level: u8,
) -> Section {
    let body_end = last_content_end(text, heading.end, end);
    let indent = match kind {
        SectionKind::Heading => String::new(),
        _ => leading_blanks(text, heading.start).to_owned(),
    };
    Section {
        title: String::new(),
        level,
        path: String::new(),
        plain_path: String::new(),
        kind,
        block,
        body: heading.end..body_end,
        heading,
        indent,
    }
}

fn titled(mut s: Section, title: String) -> Section {
    s.title = title;
    s
}

fn is_heading_prop(b: &Block) -> bool {
    b.properties
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("heading") && v.trim().eq_ignore_ascii_case("true"))
}

/// An ATX heading's text, or a setext heading's lines joined by a space.
fn heading_title(text: &str, b: &Block) -> String {
    let own = text.get(b.range.clone()).unwrap_or_default();
    let first = own.split(['\n', '\r']).next().unwrap_or_default();
    let first = first.get(lines::indent(first).1..).unwrap_or_default();
    if let Some((_, t)) = lines::atx_heading(first) {
        return t.to_owned();
    }
    let mut parts: Vec<&str> = lines::lines(own, 0)
        .filter_map(|l| own.get(l.start..l.end))
        .map(str::trim)
        .collect();
    parts.pop(); // the underline
    parts.join(" ")
}

/// An outline heading's text: its first line without bullet and `#`s.
fn item_title(text: &str, b: &Block) -> String {
    let own = text.get(b.range.clone()).unwrap_or_default();
    let first = own.split(['\n', '\r']).next().unwrap_or_default();
    let (cols, ib) = lines::indent(first);
    let after = first.get(ib..).unwrap_or_default();
    let rest = lines::bullet(after, cols)
        .and_then(|bl| after.get(bl.content_offset_bytes..))
        .unwrap_or(after);
    let (_, rest) = crate::block_parser::take_heading(rest);
    rest.trim().to_owned()
}

/// The end of the last non-blank line in `from..to`, its line break included; `from` when all
/// are blank.
pub(crate) fn last_content_end(text: &str, from: usize, to: usize) -> usize {
    let mut end = from;
    for l in lines::lines(text, from).take_while(|l| l.start < to) {
        if !lines::is_blank(text.get(l.start..l.end).unwrap_or_default()) {
            end = l.next.min(to.max(l.end));
        }
    }
    end
}

/// `at` moved past the line break that starts there, if one does.
pub(crate) fn after_break(text: &str, at: usize) -> usize {
    let rest = text.get(at..).unwrap_or_default();
    if rest.starts_with("\r\n") {
        at + 2
    } else if rest.starts_with(['\n', '\r']) {
        at + 1
    } else {
        at
    }
}

/// The spaces and tabs at the start of the line that holds `at`.
pub(crate) fn leading_blanks(text: &str, at: usize) -> &str {
    let start = text
        .get(..at)
        .and_then(|t| t.rfind(['\n', '\r']))
        .map_or(0, |i| i + 1);
    let line = text.get(start..).unwrap_or_default();
    line.get(..lines::indent(line).1).unwrap_or_default()
}

/// The section `address` names: a whole path first, then the path's last headings; each
/// exactly, then ignoring case and the spaces around each heading; each as [`Section::path`]
/// numbers headings that siblings share (`Q3#Risks[2]`), then as a heading link writes it
/// (`Q3#Risks`, which names both). No match, or more than one, is an error naming the headings
/// there are (or the choices, with their lines).
pub fn find<'a>(
    text: &str,
    all: &'a [Section],
    address: &str,
) -> Result<&'a Section, MarkdownError> {
    let numbered = |s: &Section| s.path.clone();
    let plain = |s: &Section| s.plain_path.clone();
    for key in [exact, loose] {
        let want = key(address);
        let tail = format!("#{want}");
        for at_end in [false, true] {
            for form in [&numbered as &dyn Fn(&Section) -> String, &plain] {
                let pick = |s: &&Section| {
                    let path = key(&form(s));
                    if at_end {
                        path.ends_with(&tail)
                    } else {
                        path == want
                    }
                };
                let hits: Vec<&Section> = all.iter().filter(pick).collect();
                match hits.as_slice() {
                    [] => continue,
                    [one] => return Ok(one),
                    many => {
                        let lines = LineIndex::new(text);
                        return Err(MarkdownError::AmbiguousSection {
                            address: address.to_owned(),
                            choices: many
                                .iter()
                                .map(|s| format!("{} (line {})", s.path, lines.span(&s.range()).0))
                                .collect(),
                        });
                    }
                }
            }
        }
    }
    Err(MarkdownError::NoSection {
        address: address.to_owned(),
        headings: all
            .iter()
            .filter(|s| s.kind != SectionKind::Anchor)
            .map(|s| s.path.clone())
            .collect(),
    })
}

fn exact(s: &str) -> String {
    s.to_owned()
}

fn loose(s: &str) -> String {
    s.split('#')
        .map(|p| p.trim().to_lowercase())
        .collect::<Vec<_>>()
        .join("#")
}

/// Where each line of a text ends (its line break included), to number lines by binary search.
pub struct LineIndex(Vec<usize>);

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex(lines::lines(text, 0).map(|l| l.next).collect())
    }

    /// 1-based line numbers of `range`'s first and last lines (a range ending at a line start
    /// ends on the line before).
    pub fn span(&self, range: &Range<usize>) -> (usize, usize) {
        let line_of = |at: usize| self.0.partition_point(|&next| next <= at) + 1;
        let first = line_of(range.start);
        let last = if range.end > range.start {
            line_of(range.end - 1)
        } else {
            first
        };
        (first, last.max(first))
    }
}

/// [`LineIndex::span`] for one range.
pub fn line_span(text: &str, range: &Range<usize>) -> (usize, usize) {
    LineIndex::new(text).span(range)
}
