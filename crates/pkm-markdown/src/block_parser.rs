//! The outliner block tree: each list item is a block, nested items are its children, a heading
//! owns its section, and paragraphs, code, tables and quotes outside lists are blocks.
//!
//! The parser is line-based and keeps the open blocks on an explicit stack, so a 100k-deep list
//! costs heap, never call stack, and every line is looked at a constant number of times. Trees are
//! capped at [`MAX_DEPTH`] levels (deeper items become siblings at the cap) so that the derived
//! `Clone`, `Drop`, `Debug` and `PartialEq` — which do recurse — stay shallow.

use std::ops::Range;

use serde_json::Value;

use crate::dialect::Dialect;
use crate::frontmatter;
use crate::inline_tags::{self, normalize};
use crate::lines::{self, Fence, Line};

/// Deepest block nesting kept (headings and list items together).
pub const MAX_DEPTH: usize = 128;

/// A task marker at the start of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    Todo,
    Doing,
    Done,
    Waiting,
    Cancelled,
}

impl Marker {
    /// The canonical spelling, as written back by [`serialize`].
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::Todo => "TODO",
            Marker::Doing => "DOING",
            Marker::Done => "DONE",
            Marker::Waiting => "WAITING",
            Marker::Cancelled => "CANCELLED",
        }
    }

    /// Reads a marker word; Logseq's `LATER` and `NOW` are `Todo` and `Doing`.
    pub fn from_word(word: &str) -> Option<Marker> {
        Some(match word {
            "TODO" | "LATER" => Marker::Todo,
            "DOING" | "NOW" => Marker::Doing,
            "DONE" => Marker::Done,
            "WAITING" | "WAIT" => Marker::Waiting,
            "CANCELLED" | "CANCELED" => Marker::Cancelled,
            _ => return None,
        })
    }
}

/// A block's priority, written `[#A]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    A,
    B,
    C,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::A => "A",
            Priority::B => "B",
            Priority::C => "C",
        }
    }
}

/// What a block was in the source. [`serialize`] writes every kind as a bullet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BlockKind {
    #[default]
    ListItem,
    /// An ATX or setext heading outside a list; its section is its children.
    Heading,
    Paragraph,
    /// A fenced or indented code block.
    Code,
    Table,
    Quote,
}

/// One block of the outline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Block {
    /// The block's text: bullet, marker, `[#A]` and property lines removed, continuation lines
    /// dedented, joined by `'\n'`. Headings: the text without `#`s. Paragraphs, code, tables and
    /// quotes: their source lines.
    pub content: String,
    pub children: Vec<Block>,
    pub marker: Option<Marker>,
    pub priority: Option<Priority>,
    /// `key:: value` lines, in order (`id` and `collapsed` included).
    pub properties: Vec<(String, String)>,
    /// Where each of `properties` stands in the text, in the same order.
    pub property_spans: Vec<PropertySpan>,
    /// `collapsed:: true`.
    pub collapsed: bool,
    pub heading_level: Option<u8>,
    /// From `id:: <uuid>`, only when the value is a UUID.
    pub id: Option<String>,
    /// Byte range in the original text: from the start of the block's first line (its bullet and
    /// indentation included) to the end of its last own line before any child, without the line
    /// break. Children are outside it.
    pub range: Range<usize>,
    pub kind: BlockKind,
}

/// Where a `key:: value` property stands in the text: byte ranges into the parsed text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PropertySpan {
    pub key: Range<usize>,
    /// The value without the blanks around it; for `key::` alone, empty, right after the `::`.
    pub value: Range<usize>,
}

/// A note parsed into its page model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedPage {
    pub frontmatter: Option<Value>,
    /// Frontmatter was present but refused or invalid; the body still parses.
    pub frontmatter_error: Option<String>,
    /// The frontmatter's original YAML text (present even when it was refused), including the
    /// line break that ends its last line, so [`serialize`] can write it back unchanged.
    pub frontmatter_yaml: Option<String>,
    /// Frontmatter `title`, else Logseq `title::` on the first block, else (plain markdown only)
    /// the first H1, else the page name the app derives from the file's name. Obsidian shows the
    /// file's name whatever the note says.
    pub title: String,
    /// Frontmatter `aliases` / `alias` and Logseq `alias::` on the first block.
    pub aliases: Vec<String>,
    /// [`ParsedPage::page_tags`], then every inline tag, in order of appearance, deduplicated
    /// case-insensitively (first spelling kept).
    pub tags: Vec<String>,
    /// The tags of the page as a whole: frontmatter `tags` / `tag`, then Logseq `tags::` on the
    /// first block, deduplicated case-insensitively.
    pub page_tags: Vec<String>,
    pub blocks: Vec<Block>,
    /// Byte offset where the body starts ([`frontmatter::body_start`]: after the frontmatter, else
    /// after a byte-order mark).
    pub body_start: usize,
}

/// Parses a plain-markdown note whose file stem is `file_stem`; see [`parse_page_as`].
pub fn parse_page(text: &str, file_stem: &str) -> ParsedPage {
    parse_page_as(text, file_stem, &Dialect::default())
}

/// Parses a note of a vault kept in `dialect`; `name` is the page name the app derives from the
/// note's path ([`Dialect::page_name`]). Never fails: invalid frontmatter is reported in
/// `frontmatter_error`.
pub fn parse_page_as(text: &str, name: &str, dialect: &Dialect) -> ParsedPage {
    parse_page_with_tags(
        text,
        name,
        dialect,
        &inline_tags::extract_inline_tags_as(text, dialect),
    )
}

/// [`parse_page_as`] for a reader that has the note's inline tags already, as
/// [`crate::tags::extract_inline_tags_as`] gives them (a vault scan, which takes them with the
/// links from `crate::linker::links_and_tags_as`): they are not looked for again.
pub fn parse_page_with_tags(
    text: &str,
    name: &str,
    dialect: &Dialect,
    inline_tags: &[(String, usize)],
) -> ParsedPage {
    let span = frontmatter::locate(text);
    let mut page = ParsedPage {
        body_start: frontmatter::body_start_with(text, span.as_ref()),
        ..ParsedPage::default()
    };
    if let Some(span) = span {
        let yaml = text.get(span.yaml.clone()).unwrap_or_default();
        page.frontmatter_yaml = Some(yaml.to_owned());
        match frontmatter::parse_yaml(yaml) {
            Ok(v) => page.frontmatter = Some(v),
            Err(e) => page.frontmatter_error = Some(e.to_string()),
        }
    }
    page.blocks = parse_blocks(text, page.body_start);

    let fm = page.frontmatter.as_ref();
    let first_props = page
        .blocks
        .first()
        .map(|b| b.properties.as_slice())
        .unwrap_or_default();
    let prop = |key: &str| {
        first_props
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    };

    page.title = fm
        .and_then(|v| v.get("title"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .or_else(|| prop("title").filter(|t| !t.is_empty()))
        .filter(|_| dialect.title_from_note())
        .map(str::to_owned)
        .or_else(|| {
            dialect
                .title_from_heading()
                .then(|| first_h1(&page.blocks))
                .flatten()
        })
        .unwrap_or_else(|| name.to_owned());

    let mut aliases = Vec::new();
    for key in ["aliases", "alias"] {
        if let Some(v) = fm.and_then(|v| v.get(key)) {
            collect_list(v, false, &mut aliases);
        }
    }
    if let Some(v) = prop("alias") {
        aliases.extend(split_refs(v, false));
    }
    dedup_ci(&mut aliases);
    page.aliases = aliases;

    let mut page_tags = Vec::new();
    for key in ["tags", "tag"] {
        if let Some(v) = fm.and_then(|v| v.get(key)) {
            collect_list(v, true, &mut page_tags);
        }
    }
    if let Some(v) = prop("tags") {
        page_tags.extend(split_refs(v, true));
    }
    dedup_ci(&mut page_tags);
    let mut all_tags = page_tags.clone();
    all_tags.extend(inline_tags.iter().map(|(t, _)| t.clone()));
    dedup_ci(&mut all_tags);
    page.page_tags = page_tags;
    page.tags = all_tags;
    page
}

/// Parses the blocks of `text[body_start..]`; ranges are offsets into `text`.
pub fn parse_blocks(text: &str, body_start: usize) -> Vec<Block> {
    let mut b = Builder {
        text,
        frames: Vec::new(),
        roots: Vec::new(),
        leaf: None,
    };
    for line in lines::lines(text, body_start) {
        b.line(line);
    }
    b.finish_leaf();
    while !b.frames.is_empty() {
        b.close_top();
    }
    b.roots
}

fn first_h1(blocks: &[Block]) -> Option<String> {
    let mut stack: Vec<&Block> = blocks.iter().rev().collect();
    while let Some(b) = stack.pop() {
        if b.heading_level == Some(1) && !b.content.trim().is_empty() {
            return Some(b.content.trim().to_owned());
        }
        stack.extend(b.children.iter().rev());
    }
    None
}

/// Strings of a frontmatter list or string value. Tags split a string on commas and spaces;
/// aliases only on commas (an alias may hold spaces).
pub(crate) fn collect_list(v: &Value, is_tags: bool, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.extend(split_refs(s, is_tags)),
        Value::Array(items) => {
            for item in items {
                let s = match item {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => continue,
                };
                let s = strip_brackets(s.trim());
                let s = if is_tags { normalize(s) } else { s.to_owned() };
                if !s.is_empty() {
                    out.push(s);
                }
            }
        }
        _ => {}
    }
}

/// Splits `a, [[b c]], #d` into items; for tags, also on whitespace outside `[[...]]`.
fn split_refs(s: &str, is_tags: bool) -> Vec<String> {
    ref_items(s, is_tags)
        .into_iter()
        .map(|(_, item)| item)
        .filter(|item| !item.is_empty())
        .collect()
}

/// The items of a list written in one string (`a, [[b c]], #d`), each with its byte range in `s`:
/// split on commas; a piece that is not one `[[...]]` / `#[[...]]` is, for tags, also split on
/// whitespace. Tags are normalized, aliases trimmed; an item may be empty (`#`, `[[]]`).
pub(crate) fn ref_items(s: &str, is_tags: bool) -> Vec<(Range<usize>, String)> {
    let mut out = Vec::new();
    let mut pos = 0;
    for piece in s.split(',') {
        let piece_start = pos;
        pos += piece.len() + 1;
        let trimmed = piece.trim();
        if trimmed.is_empty() {
            continue;
        }
        let t_start = piece_start + (piece.len() - piece.trim_start().len());
        let bracketed = strip_brackets(trimmed);
        if is_tags && bracketed.len() == trimmed.len() {
            let mut from = 0;
            for word in trimmed.split_whitespace() {
                let rel = trimmed.get(from..).and_then(|t| t.find(word)).unwrap_or(0) + from;
                from = rel + word.len();
                out.push((t_start + rel..t_start + rel + word.len(), normalize(word)));
            }
        } else {
            let item = if is_tags {
                normalize(bracketed)
            } else {
                bracketed.trim().to_owned()
            };
            out.push((t_start..t_start + trimmed.len(), item));
        }
    }
    out
}

/// `#[[x]]`, `[[x]]` → `x`; anything else unchanged.
pub(crate) fn strip_brackets(s: &str) -> &str {
    let t = s.strip_prefix('#').unwrap_or(s);
    t.strip_prefix("[[")
        .and_then(|t| t.strip_suffix("]]"))
        .unwrap_or(s)
}

fn dedup_ci(v: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    v.retain(|t| seen.insert(t.to_lowercase()));
}

/// The state of a list item that is still open.
struct ItemState {
    /// Column where the item's text starts; lines indented this far continue it.
    content_col: usize,
    /// Property lines are still accepted (nothing but the first line and properties so far).
    props_open: bool,
    /// Blank lines seen and not yet known to belong to this item.
    pending_blanks: usize,
    /// An open code fence inside the item.
    fence: Option<Fence>,
    /// The last own line was paragraph text, so an unindented line may continue it lazily.
    lazy_ok: bool,
    /// No child yet: own lines still extend the range.
    range_open: bool,
    /// Lines in `content` so far.
    lines: usize,
}

enum FrameKind {
    Heading(u8),
    Item(ItemState),
}

struct Frame {
    block: Block,
    kind: FrameKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LeafKind {
    Paragraph,
    Table,
    Quote,
    Fenced(Fence),
    Indented,
}

/// A block outside any list that is still collecting lines.
struct Leaf {
    kind: LeafKind,
    lines: Vec<Line>,
    /// Blank lines inside indented code, kept only if more code follows.
    pending_blank: Vec<Line>,
}

struct Builder<'a> {
    text: &'a str,
    frames: Vec<Frame>,
    roots: Vec<Block>,
    leaf: Option<Leaf>,
}

impl Builder<'_> {
    fn slice(&self, r: Range<usize>) -> &str {
        self.text.get(r).unwrap_or_default()
    }

    fn line(&mut self, l: Line) {
        let text = self.text;
        let s = text.get(l.start..l.end).unwrap_or_default();
        if self.leaf.is_some() && self.leaf_line(l, s) {
            return;
        }
        if lines::is_blank(s) {
            if let Some((block, st)) = self.top_item() {
                if st.fence.is_some() {
                    push_content(block, st, "");
                } else {
                    st.pending_blanks += 1;
                }
            }
            return;
        }
        let (cols, ibytes) = lines::indent(s);
        let after = s.get(ibytes..).unwrap_or_default();

        if let Some((_, st)) = self.top_item() {
            if st.fence.is_some() {
                if cols >= st.content_col {
                    let line = lines::strip_cols(s, st.content_col);
                    self.add_item_line(line, l.end);
                    return;
                }
                // A less indented line ends the item, and the fence with it.
                st.fence = None;
            }
            // Four or more columns past the item's text, after paragraph text, is a lazy
            // continuation (CommonMark: indented code cannot interrupt a paragraph), even when it
            // looks like a bullet. The serializer relies on it to write such content back.
            if st.pending_blanks == 0 && st.lazy_ok && cols >= st.content_col + 4 {
                let line = lines::strip_cols(s, st.content_col);
                self.add_item_line(line, l.end);
                return;
            }
            if !lines::is_thematic_break(after)
                && let Some(b) = lines::bullet(after, cols)
            {
                self.close_items_deeper_than(cols);
                self.start_item(l, cols, ibytes, b);
                return;
            }
            let Some((_, st)) = self.top_item() else {
                return;
            };
            if cols >= st.content_col {
                let line = lines::strip_cols(s, st.content_col);
                self.add_item_line(line, l.end);
                return;
            }
            if st.pending_blanks == 0 && st.lazy_ok && !interrupts(after, cols) {
                self.add_item_line(after, l.end);
                return;
            }
            let blanks = st.pending_blanks;
            self.close_items_deeper_than(cols);
            if let Some((_, st)) = self.top_item() {
                st.pending_blanks = blanks;
                let line = lines::strip_cols(s, st.content_col);
                self.add_item_line(line, l.end);
                return;
            }
        }

        if cols >= 4 {
            // A Logseq outline right under a heading or paragraph (`## Usage\n\t- item`) is a
            // list, not indented code.
            if let Some((cols, b)) = lines::opens_outline(text, l) {
                self.start_item(l, cols, ibytes, b);
                return;
            }
            self.leaf = Some(Leaf {
                kind: LeafKind::Indented,
                lines: vec![l],
                pending_blank: Vec::new(),
            });
            return;
        }
        if let Some((level, title)) = lines::atx_heading(after) {
            self.heading(l.start..l.end, level, title.to_owned());
        } else if let Some(f) = lines::fence_open(s) {
            self.leaf = Some(Leaf {
                kind: LeafKind::Fenced(f),
                lines: vec![l],
                pending_blank: Vec::new(),
            });
        } else if lines::is_thematic_break(after) {
            // A rule separates blocks; it is not one.
        } else if let Some(b) = lines::bullet(after, cols) {
            self.start_item(l, cols, ibytes, b);
        } else {
            let kind = if after.starts_with('>') {
                LeafKind::Quote
            } else if after.starts_with('|') {
                LeafKind::Table
            } else {
                LeafKind::Paragraph
            };
            self.leaf = Some(Leaf {
                kind,
                lines: vec![l],
                pending_blank: Vec::new(),
            });
        }
    }

    /// Feeds a line to the open leaf. Returns false when the line ended the leaf and still needs
    /// handling.
    fn leaf_line(&mut self, l: Line, s: &str) -> bool {
        let Some(leaf) = self.leaf.as_mut() else {
            return false;
        };
        match leaf.kind {
            LeafKind::Fenced(f) => {
                leaf.lines.push(l);
                if lines::fence_closes(s, f) {
                    self.finish_leaf();
                }
                true
            }
            LeafKind::Indented => {
                if lines::is_blank(s) {
                    leaf.pending_blank.push(l);
                    return true;
                }
                if lines::indent(s).0 >= 4 {
                    let blanks = std::mem::take(&mut leaf.pending_blank);
                    leaf.lines.extend(blanks);
                    leaf.lines.push(l);
                    return true;
                }
                self.finish_leaf();
                false
            }
            kind => {
                if lines::is_blank(s) {
                    self.finish_leaf();
                    return true;
                }
                let (cols, ibytes) = lines::indent(s);
                let after = s.get(ibytes..).unwrap_or_default();
                if cols <= 3
                    && kind == LeafKind::Paragraph
                    && let Some(level) = lines::setext_underline(after)
                {
                    let first = leaf.lines.first().map_or(l.start, |f| f.start);
                    let title = leaf
                        .lines
                        .iter()
                        .map(|x| self.text.get(x.start..x.end).unwrap_or_default().trim())
                        .collect::<Vec<_>>()
                        .join(" ");
                    self.leaf = None;
                    self.heading(first..l.end, level, title);
                    return true;
                }
                let starts_block = (cols <= 3
                    && (lines::atx_heading(after).is_some()
                        || lines::fence_open(s).is_some()
                        || lines::is_thematic_break(after)
                        || (after.starts_with('>') && kind != LeafKind::Quote)
                        || lines::bullet(after, cols)
                            .is_some_and(|b| !b.empty && !b.ordered_not_one)))
                    // A Logseq outline under a paragraph (page properties, a note's first
                    // lines): CommonMark would continue the paragraph lazily.
                    || (kind == LeafKind::Paragraph && lines::opens_outline(self.text, l).is_some());
                if starts_block {
                    self.finish_leaf();
                    return false;
                }
                leaf.lines.push(l);
                true
            }
        }
    }

    fn finish_leaf(&mut self) {
        let Some(leaf) = self.leaf.take() else { return };
        let (Some(first), Some(last)) = (leaf.lines.first(), leaf.lines.last()) else {
            return;
        };
        let mut block = Block {
            range: first.start..last.end,
            ..Block::default()
        };
        let mut rest: &[Line] = &leaf.lines;
        block.kind = match leaf.kind {
            LeafKind::Paragraph => {
                // Leading `key:: value` lines are the block's properties (Logseq page properties).
                while let Some((l, tail)) = rest.split_first() {
                    let Some((k, v)) = lines::property(self.slice(l.start..l.end).trim_start())
                    else {
                        break;
                    };
                    apply_property(&mut block, self.text, k, v);
                    rest = tail;
                }
                BlockKind::Paragraph
            }
            LeafKind::Table => BlockKind::Table,
            LeafKind::Quote => BlockKind::Quote,
            LeafKind::Fenced(_) | LeafKind::Indented => BlockKind::Code,
        };
        let mut content = String::new();
        for (i, l) in rest.iter().enumerate() {
            if i > 0 {
                content.push('\n');
            }
            content.push_str(self.slice(l.start..l.end));
        }
        block.content = content;
        self.attach(block);
    }

    fn heading(&mut self, range: Range<usize>, level: u8, title: String) {
        self.close_items();
        while matches!(self.frames.last(), Some(Frame { kind: FrameKind::Heading(l), .. }) if *l >= level)
        {
            self.close_top();
        }
        let mut block = Block {
            range,
            heading_level: Some(level),
            kind: BlockKind::Heading,
            ..Block::default()
        };
        let (marker, rest) = take_marker(&title);
        let (priority, rest) = take_priority(rest);
        block.marker = marker;
        block.priority = priority;
        block.content = rest.to_owned();
        self.push_frame(Frame {
            block,
            kind: FrameKind::Heading(level),
        });
    }

    /// Opens the item whose bullet is at column `cols` (byte `ibytes` of the line). A bullet
    /// right after the bullet (`- - x`) nests, as in CommonMark, up to the depth cap.
    fn start_item(&mut self, l: Line, cols: usize, ibytes: usize, first: lines::Bullet) {
        let mut col = cols;
        let mut at = l.start + ibytes;
        let mut bullet = first;
        let mut range_start = l.start;
        loop {
            let content_col = col + bullet.content_offset_cols;
            let content_start = (at + bullet.content_offset_bytes).min(l.end);
            let rest = self.text.get(content_start..l.end).unwrap_or_default();
            let nested = if bullet.empty || self.frames.len() + 2 > MAX_DEPTH {
                None
            } else {
                lines::bullet(rest, content_col).filter(|_| !lines::is_thematic_break(rest))
            };
            let mut st = ItemState {
                content_col,
                props_open: true,
                pending_blanks: 0,
                fence: None,
                lazy_ok: false,
                range_open: true,
                lines: 0,
            };
            match nested {
                Some(nb) => {
                    let block = Block {
                        range: range_start..content_start,
                        ..Block::default()
                    };
                    st.props_open = false;
                    self.push_frame(Frame {
                        block,
                        kind: FrameKind::Item(st),
                    });
                    col = content_col;
                    at = content_start;
                    range_start = content_start;
                    bullet = nb;
                }
                None => {
                    let mut block = Block {
                        range: range_start..l.end,
                        ..Block::default()
                    };
                    first_line(&mut block, &mut st, self.text, rest);
                    self.push_frame(Frame {
                        block,
                        kind: FrameKind::Item(st),
                    });
                    return;
                }
            }
        }
    }

    /// Adds a (dedented) line to the deepest open item.
    fn add_item_line(&mut self, line: &str, end: usize) {
        let text = self.text;
        let Some((block, st)) = self.top_item() else {
            return;
        };
        if st.range_open && !lines::is_blank(line) {
            block.range.end = end;
        }
        if let Some(f) = st.fence {
            push_content(block, st, line);
            if lines::fence_closes(line, f) {
                st.fence = None;
            }
            return;
        }
        if st.props_open
            && st.pending_blanks == 0
            && let Some((k, v)) = lines::property(line)
        {
            apply_property(block, text, k, v);
            st.lazy_ok = true;
            return;
        }
        st.props_open = false;
        push_content(block, st, line);
        st.fence = lines::fence_open(line);
        st.lazy_ok = st.fence.is_none();
    }

    fn top_item(&mut self) -> Option<(&mut Block, &mut ItemState)> {
        match self.frames.last_mut()? {
            Frame {
                block,
                kind: FrameKind::Item(st),
            } => Some((block, st)),
            Frame {
                kind: FrameKind::Heading(_),
                ..
            } => None,
        }
    }

    fn push_frame(&mut self, frame: Frame) {
        if self.frames.len() >= MAX_DEPTH {
            self.close_top();
        }
        if let Some(Frame {
            kind: FrameKind::Item(st),
            ..
        }) = self.frames.last_mut()
        {
            st.range_open = false;
            st.props_open = false;
            st.lazy_ok = false;
        }
        self.frames.push(frame);
    }

    fn close_top(&mut self) {
        if let Some(frame) = self.frames.pop() {
            self.attach(frame.block);
        }
    }

    fn attach(&mut self, block: Block) {
        match self.frames.last_mut() {
            Some(parent) => parent.block.children.push(block),
            None => self.roots.push(block),
        }
    }

    fn close_items(&mut self) {
        while matches!(
            self.frames.last(),
            Some(Frame {
                kind: FrameKind::Item(_),
                ..
            })
        ) {
            self.close_top();
        }
    }

    /// Closes items that a line at column `cols` is not inside of.
    fn close_items_deeper_than(&mut self, cols: usize) {
        while matches!(self.frames.last(), Some(Frame { kind: FrameKind::Item(st), .. }) if st.content_col > cols)
        {
            self.close_top();
        }
    }
}

/// Whether a line that is not indented into an item starts a block of its own (and so cannot be
/// a lazy continuation of the item's paragraph).
fn interrupts(after: &str, cols: usize) -> bool {
    cols <= 3
        && (lines::atx_heading(after).is_some()
            || lines::fence_open(after).is_some()
            || lines::is_thematic_break(after)
            || after.starts_with('>'))
}

fn push_content(block: &mut Block, st: &mut ItemState, line: &str) {
    if st.lines > 0 {
        for _ in 0..st.pending_blanks {
            block.content.push('\n');
        }
        block.content.push('\n');
    }
    block.content.push_str(line);
    st.lines += 1;
    st.pending_blanks = 0;
}

/// Records the property `key:: value`; both are slices of `text`, the note being parsed.
fn apply_property(block: &mut Block, text: &str, key: &str, value: &str) {
    if key.eq_ignore_ascii_case("collapsed") {
        block.collapsed = value.eq_ignore_ascii_case("true");
    } else if key.eq_ignore_ascii_case("id") && lines::is_uuid(value) {
        block.id = Some(value.to_owned());
    }
    block.properties.push((key.to_owned(), value.to_owned()));
    if let (Some(k), Some(v)) = (offset_in(text, key), offset_in(text, value)) {
        let key_range = k..k + key.len();
        // `key::` alone: the value is where the `::` ends.
        let value = if value.is_empty() {
            key_range.end + 2..key_range.end + 2
        } else {
            v..v + value.len()
        };
        block.property_spans.push(PropertySpan {
            key: key_range,
            value,
        });
    }
}

/// Where `part`, a slice of `text`, starts in it (`None` for a string that is not part of it).
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (at + part.len() <= text.len()).then_some(at)
}

/// The text after a bullet: heading hashes, marker, priority, then a property or the content.
fn first_line(block: &mut Block, st: &mut ItemState, text: &str, rest: &str) {
    let (heading, rest) = take_heading(rest);
    let (marker, rest) = take_marker(rest);
    let (priority, rest) = take_priority(rest);
    block.heading_level = heading;
    block.marker = marker;
    block.priority = priority;
    if heading.is_none()
        && marker.is_none()
        && priority.is_none()
        && let Some((k, v)) = lines::property(rest)
    {
        apply_property(block, text, k, v);
        st.lazy_ok = true;
        return;
    }
    if !rest.is_empty() {
        push_content(block, st, rest);
        st.fence = lines::fence_open(rest);
        st.lazy_ok = st.fence.is_none();
    }
}

/// `word` at the start of `s` when followed by whitespace or the end: the rest, trimmed.
fn after_word(s: &str, word_len: usize) -> Option<&str> {
    let rest = s.get(word_len..)?;
    if rest.is_empty() || rest.starts_with([' ', '\t']) {
        Some(rest.trim_start_matches([' ', '\t']))
    } else {
        None
    }
}

pub(crate) fn take_heading(s: &str) -> (Option<u8>, &str) {
    let n = s.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&n)
        && let Some(rest) = after_word(s, n)
    {
        return (u8::try_from(n).ok(), rest);
    }
    (None, s)
}

pub(crate) fn take_marker(s: &str) -> (Option<Marker>, &str) {
    let n = s.bytes().take_while(u8::is_ascii_uppercase).count();
    if n >= 3
        && let Some(m) = s.get(..n).and_then(Marker::from_word)
        && let Some(rest) = after_word(s, n)
    {
        return (Some(m), rest);
    }
    (None, s)
}

pub(crate) fn take_priority(s: &str) -> (Option<Priority>, &str) {
    let p = match s.get(..4) {
        Some("[#A]") => Priority::A,
        Some("[#B]") => Priority::B,
        Some("[#C]") => Priority::C,
        _ => return (None, s),
    };
    match after_word(s, 4) {
        Some(rest) => (Some(p), rest),
        None => (None, s),
    }
}
