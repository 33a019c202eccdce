//! The regions of a note that links and tags must skip, found once with pulldown-cmark: code
//! spans, code blocks and HTML (comments included); plus the markdown links it resolves, the
//! `[[wiki links]]` found by a linear scan of what remains, and bare URLs.

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::dialect::Dialect;
use crate::frontmatter;
use crate::outline;

/// A markdown link or image as pulldown-cmark resolved it.
pub(crate) struct MdLink {
    pub range: Range<usize>,
    pub dest: String,
    /// The link's text (plain text and code of its label).
    pub text: String,
    pub link_type: LinkType,
    pub image: bool,
}

/// What pulldown-cmark found in the body of a note; all offsets are into the whole text.
pub(crate) struct Regions {
    /// Where the body starts ([`frontmatter::body_start`]).
    pub body_start: usize,
    /// Code spans, code blocks and HTML (and the dialect's comments and literal blocks), sorted
    /// and merged.
    pub code: Vec<Range<usize>>,
    /// `code` without the inline code spans: where no wiki link can be (a wiki link's alias may
    /// hold a code span, `[[T|`x`]]`).
    pub blocks: Vec<Range<usize>>,
    /// Links and images in document order.
    pub links: Vec<MdLink>,
}

pub(crate) fn find(text: &str, dialect: &Dialect) -> Regions {
    let body_start = frontmatter::body_start(text);
    let body = text.get(body_start..).unwrap_or_default();
    let mut blocks = Vec::new();
    let mut spans = Vec::new();
    let mut links: Vec<MdLink> = Vec::new();
    let shift = |r: Range<usize>| r.start + body_start..r.end + body_start;
    let found = Found {
        blocks: &mut blocks,
        spans: &mut spans,
        links: &mut links,
    };
    scan_markdown(text, body, &shift, true, found);
    if dialect.org_blocks() {
        blocks.extend(org_blocks(text, body_start));
    }
    let mut code = merge(blocks.iter().chain(&spans).cloned().collect());
    if dialect.percent_comments() {
        let comments = percent_comments(text, body_start, &code);
        if !comments.is_empty() {
            blocks.extend(comments.iter().cloned());
            code.extend(comments);
            code = merge(code);
            // A link inside a comment is no link.
            links.retain(|l| {
                code.iter()
                    .all(|c| l.range.start < c.start || l.range.start >= c.end)
            });
        }
    }
    Regions {
        body_start,
        code,
        blocks: merge(blocks),
        links,
    }
}

/// Where [`scan_markdown`] puts what it finds.
struct Found<'a> {
    /// Code blocks and HTML.
    blocks: &'a mut Vec<Range<usize>>,
    /// Inline code spans.
    spans: &'a mut Vec<Range<usize>>,
    links: &'a mut Vec<MdLink>,
}

/// Logseq's literal org-mode blocks in markdown (`#+BEGIN_SRC` … `#+END_SRC`, and `EXAMPLE`,
/// `EXPORT`, `COMMENT`, `QUERY`), from `from` on: from a `#+BEGIN_` that starts a line (after
/// indentation and a bullet) to the end of the line of its `#+END_` (or the end of the note).
/// Their text is literal, as in a code block; `TIP`, `NOTE`, `QUOTE` and the other admonitions
/// hold ordinary text and are left alone.
fn org_blocks(text: &str, from: usize) -> Vec<Range<usize>> {
    const LITERAL: [&str; 5] = ["src", "example", "export", "comment", "query"];
    let mut out = Vec::new();
    let mut pos = from;
    let mut open: Option<(usize, &str)> = None;
    for line in text.get(from..).unwrap_or_default().split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let body = line.trim_start_matches([' ', '\t']);
        let body = body.strip_prefix("- ").unwrap_or(body).trim_start();
        let (is_begin, word) = match strip_prefix_ci(body, "#+begin_") {
            Some(w) => (true, w),
            None => match strip_prefix_ci(body, "#+end_") {
                Some(w) => (false, w),
                None => continue,
            },
        };
        let kind = word
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match open {
            None if is_begin => {
                if let Some(k) = LITERAL.iter().find(|k| **k == kind) {
                    open = Some((start + (line.len() - body.len()), k));
                }
            }
            Some((at, k)) if !is_begin && kind == k => {
                out.push(at..start + line.trim_end_matches(['\n', '\r']).len());
                open = None;
            }
            _ => {}
        }
    }
    if let Some((at, _)) = open {
        out.push(at..text.len());
    }
    out
}

/// `s` without the ASCII prefix `p`, matched ignoring ASCII case.
fn strip_prefix_ci<'a>(s: &'a str, p: &str) -> Option<&'a str> {
    s.get(..p.len())
        .filter(|head| head.eq_ignore_ascii_case(p))
        .and_then(|_| s.get(p.len()..))
}

/// Obsidian's `%%comments%%` from `from` on, outside `code` (sorted): each `%%` opens a comment
/// that the next `%%` closes (across lines); an unclosed one runs to the end of the note.
fn percent_comments(text: &str, from: usize, code: &[Range<usize>]) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = from;
    while let Some(open) = find2(bytes, i, bytes.len(), b'%') {
        let at = code.partition_point(|c| c.end <= open);
        if let Some(c) = code.get(at).filter(|c| c.start <= open) {
            i = c.end;
            continue;
        }
        let close = find2(bytes, open + 2, bytes.len(), b'%').map_or(bytes.len(), |c| c + 2);
        out.push(open..close);
        i = close;
    }
    out
}

/// Adds what pulldown-cmark finds in `md` to `found`, each range mapped to the note by
/// `to_note`. An indented code block that is a Logseq outline ([`outline::in_code`]) is scanned
/// again, dedented, as the list it is (`outlines` is false in that inner scan).
fn scan_markdown(
    text: &str,
    md: &str,
    to_note: &dyn Fn(Range<usize>) -> Range<usize>,
    outlines: bool,
    found: Found<'_>,
) {
    let Found {
        blocks: code,
        spans,
        links,
    } = found;
    let mut open_link: Option<usize> = None;
    for (event, range) in Parser::new_ext(md, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Code(c) => {
                if let Some(l) = open_link.and_then(|i| links.get_mut(i)) {
                    l.text.push_str(&c);
                }
                spans.push(to_note(range));
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)) if outlines => {
                let block = to_note(range);
                match outline::in_code(text, block.clone()) {
                    Some(o) => {
                        if o.end < block.end {
                            code.push(o.end..block.end);
                        }
                        let inner = |r: Range<usize>| o.range_to_note(r);
                        let found = Found {
                            blocks: code,
                            spans,
                            links,
                        };
                        scan_markdown(text, &o.text, &inner, false, found);
                    }
                    None => code.push(block),
                }
            }
            Event::Start(Tag::CodeBlock(_) | Tag::HtmlBlock)
            | Event::InlineHtml(_)
            | Event::Html(_) => {
                code.push(to_note(range));
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => {
                open_link = Some(links.len());
                links.push(MdLink {
                    range: to_note(range),
                    dest: dest_url.into_string(),
                    text: String::new(),
                    link_type,
                    image: false,
                });
            }
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => links.push(MdLink {
                range: to_note(range),
                dest: dest_url.into_string(),
                text: String::new(),
                link_type,
                image: true,
            }),
            Event::End(TagEnd::Link) => open_link = None,
            Event::Text(t) => {
                if let Some(l) = open_link.and_then(|i| links.get_mut(i)) {
                    l.text.push_str(&t);
                }
            }
            _ => {}
        }
    }
}

/// Sorts and merges overlapping or touching ranges.
pub(crate) fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_unstable_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The parts of `0..len` not covered by `excluded` (sorted and merged).
pub(crate) fn gaps(excluded: &[Range<usize>], len: usize) -> Vec<Range<usize>> {
    let mut out = Vec::with_capacity(excluded.len() + 1);
    let mut pos = 0;
    for r in excluded {
        if r.start > pos {
            out.push(pos..r.start.min(len));
        }
        pos = pos.max(r.end);
    }
    if pos < len {
        out.push(pos..len);
    }
    out
}

/// What stands right before a `[[`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WikiPrefix {
    None,
    /// `![[...]]`
    Embed,
    /// `#[[...]]`, a tag.
    Hash,
}

/// A `[[...]]` found in the text.
#[derive(Debug, Clone)]
pub(crate) struct Wiki {
    /// From the prefix (`!` or `#`) if any, else from `[[`, to after `]]`.
    pub range: Range<usize>,
    /// Between the brackets.
    pub inner: Range<usize>,
    pub prefix: WikiPrefix,
}

/// Finds `[[inner]]` within each allowed range. `inner` is non-empty and holds no `[`, `]` or line
/// break, which also keeps the scan linear: a failed candidate's scan stops at the next `[`.
pub(crate) fn wikilinks(text: &str, allowed: &[Range<usize>]) -> Vec<Wiki> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for gap in allowed {
        let mut i = gap.start;
        while let Some(j) = find2(bytes, i, gap.end, b'[') {
            let mut k = j + 2;
            while k < gap.end && !matches!(bytes.get(k), Some(b'[' | b']' | b'\n')) {
                k += 1;
            }
            let closed = k > j + 2
                && k + 1 < gap.end
                && bytes.get(k) == Some(&b']')
                && bytes.get(k + 1) == Some(&b']');
            if !closed {
                i = j + 1;
                continue;
            }
            i = k + 2;
            let before = j.checked_sub(1).and_then(|p| bytes.get(p)).copied();
            let prefix = match before {
                Some(b'\\') => continue,
                Some(b'!') => WikiPrefix::Embed,
                Some(b'#') => WikiPrefix::Hash,
                _ => WikiPrefix::None,
            };
            let start = if prefix == WikiPrefix::None { j } else { j - 1 };
            out.push(Wiki {
                range: start..k + 2,
                inner: j + 2..k,
                prefix,
            });
        }
    }
    out
}

/// The first `i` in `from..end` where `bytes[i] == bytes[i + 1] == b`.
fn find2(bytes: &[u8], from: usize, end: usize, b: u8) -> Option<usize> {
    let end = end.min(bytes.len());
    let mut i = from;
    while i + 1 < end {
        match bytes.get(i + 1) {
            Some(&c) if c == b => {
                if bytes.get(i) == Some(&b) {
                    return Some(i);
                }
                i += 1;
            }
            _ => i += 2,
        }
    }
    None
}

/// Bare URLs (`scheme://...` up to whitespace or `<>"`), so tags skip their `#fragment`s.
pub(crate) fn bare_urls(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut floor = 0;
    let mut from = 0;
    while let Some(rel) = text.get(from..).and_then(|t| t.find("://")) {
        let at = from + rel;
        let mut start = at;
        while start > floor
            && bytes
                .get(start - 1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || b"+.-".contains(c))
        {
            start -= 1;
        }
        let mut end = at + 3;
        while bytes
            .get(end)
            .is_some_and(|c| !c.is_ascii_whitespace() && !b"<>\"".contains(c))
        {
            end += 1;
        }
        if start < at && bytes.get(start).is_some_and(u8::is_ascii_alphabetic) {
            out.push(start..end);
        }
        floor = end;
        from = end.max(at + 3);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_and_gaps() {
        assert_eq!(merge(vec![5..7, 1..3, 2..4, 7..8]), vec![1..4, 5..8]);
        assert_eq!(gaps(&[1..4, 5..8], 10), vec![0..1, 4..5, 8..10]);
        assert_eq!(
            gaps(std::slice::from_ref(&(0..10)), 10),
            Vec::<Range<usize>>::new()
        );
    }

    #[test]
    fn wikilink_scan() {
        let t = "a [[x]] ![[y]] #[[z w]] \\[[no]] [[[q]]] [[bad\n]]";
        let found: Vec<_> = wikilinks(t, std::slice::from_ref(&(0..t.len())))
            .into_iter()
            .map(|w| (&t[w.range], &t[w.inner], w.prefix))
            .collect();
        assert_eq!(
            found,
            vec![
                ("[[x]]", "x", WikiPrefix::None),
                ("![[y]]", "y", WikiPrefix::Embed),
                ("#[[z w]]", "z w", WikiPrefix::Hash),
                ("[[q]]", "q", WikiPrefix::None),
            ]
        );
    }

    #[test]
    fn urls() {
        let t = "see https://x.org/a#b, and <http://y.z> then ://nothing";
        let found: Vec<_> = bare_urls(t).into_iter().map(|r| &t[r]).collect();
        assert_eq!(found, vec!["https://x.org/a#b,", "http://y.z"]);
    }

    #[test]
    fn code_regions() {
        let t = "---\na: `x`\n---\ntext `code` <!-- c -->\n\n```\nblock\n```\n";
        let s = find(t, &Dialect::default());
        let found: Vec<_> = s.code.iter().map(|r| &t[r.clone()]).collect();
        assert_eq!(found, vec!["`code`", "<!-- c -->", "```\nblock\n```"]);
    }
}
