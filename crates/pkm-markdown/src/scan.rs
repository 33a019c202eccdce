//! The regions of a note that links and tags must skip, found once with pulldown-cmark: code
//! spans, code blocks and HTML (comments included); plus the markdown links it resolves, the
//! `[[wiki links]]` found by a linear scan of what remains, and bare URLs.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::frontmatter;

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
pub(crate) struct Scan {
    /// Frontmatter end (0 without frontmatter).
    pub body_start: usize,
    /// Code spans, code blocks and HTML, sorted and merged.
    pub code: Vec<Range<usize>>,
    /// Links and images in document order.
    pub links: Vec<MdLink>,
}

pub(crate) fn scan(text: &str) -> Scan {
    let body_start = frontmatter::locate(text).map_or(0, |s| s.body_start);
    let body = text.get(body_start..).unwrap_or_default();
    let mut code = Vec::new();
    let mut links: Vec<MdLink> = Vec::new();
    let mut open_link: Option<usize> = None;
    let shift = |r: Range<usize>| r.start + body_start..r.end + body_start;
    for (event, range) in Parser::new_ext(body, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Code(c) => {
                if let Some(l) = open_link.and_then(|i| links.get_mut(i)) {
                    l.text.push_str(&c);
                }
                code.push(shift(range));
            }
            Event::Start(Tag::CodeBlock(_) | Tag::HtmlBlock)
            | Event::InlineHtml(_)
            | Event::Html(_) => {
                code.push(shift(range));
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => {
                open_link = Some(links.len());
                links.push(MdLink {
                    range: shift(range),
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
                range: shift(range),
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
    Scan {
        body_start,
        code: merge(code),
        links,
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
        let s = scan(t);
        let found: Vec<_> = s.code.iter().map(|r| &t[r.clone()]).collect();
        assert_eq!(found, vec!["`code`", "<!-- c -->", "```\nblock\n```"]);
    }
}
