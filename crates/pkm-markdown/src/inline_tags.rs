//! Inline tags: `#tag` and `#[[multi word]]` in a note's body, outside code, HTML, links and
//! URLs, with where each one stands in the text.

use std::cell::OnceCell;
use std::ops::Range;

use crate::dialect::Dialect;
use crate::regions::{self, Regions, WikiPrefix};

/// A tag found in the body, with the span of its source (`#tag` or `#[[multi word]]`).
pub(crate) struct InlineTag {
    pub(crate) tag: String,
    pub(crate) span: Range<usize>,
}

/// Inline tags of `text` (frontmatter skipped), without the `#`, with the byte offset of their
/// `#`. A tag is `#` followed by letters, digits and `_ - / .` (a trailing `.` or `/` is
/// punctuation, and a tag of digits only is not a tag: `#1` is an issue number). It must not
/// follow a letter, digit or other word character (`a#b`, `&#39;`, `page.md#part`), and is never
/// taken from code, HTML, links, URLs or headings' `# `. `#[[multi word]]` gives `multi word`.
pub fn extract_inline_tags(text: &str) -> Vec<(String, usize)> {
    extract_inline_tags_as(text, &Dialect::default())
}

/// [`extract_inline_tags`] in a vault kept in `dialect` (Obsidian's `%%comments%%` hold none).
pub fn extract_inline_tags_as(text: &str, dialect: &Dialect) -> Vec<(String, usize)> {
    extract_inline_tags_in(text, dialect, &OnceCell::new())
}

/// [`extract_inline_tags_as`] with the text's regions found at most once between it and other
/// readers of the same text (`crate::linker::links_and_tags_as`).
pub(crate) fn extract_inline_tags_in(
    text: &str,
    dialect: &Dialect,
    regions: &OnceCell<Regions>,
) -> Vec<(String, usize)> {
    inline_tags_in(text, dialect, regions)
        .into_iter()
        .map(|t| (t.tag, t.span.start))
        .collect()
}

/// Strips a leading `#` and surrounding whitespace.
pub fn normalize(tag: &str) -> String {
    tag.trim().trim_start_matches('#').trim().to_owned()
}

pub(crate) fn inline_tags(text: &str) -> Vec<InlineTag> {
    inline_tags_of(text, &Dialect::default())
}

pub(crate) fn inline_tags_of(text: &str, dialect: &Dialect) -> Vec<InlineTag> {
    inline_tags_in(text, dialect, &OnceCell::new())
}

/// [`inline_tags_of`], taking the text's regions from `regions` (found there if not yet).
fn inline_tags_in(text: &str, dialect: &Dialect, regions: &OnceCell<Regions>) -> Vec<InlineTag> {
    if !text.contains('#') {
        return Vec::new();
    }
    let s = regions.get_or_init(|| regions::find(text, dialect));
    let mut code_and_fm = s.code.clone();
    code_and_fm.push(0..s.body_start);
    let code_and_fm = regions::merge(code_and_fm);
    let wikis = regions::wikilinks(text, &regions::gaps(&code_and_fm, text.len()));

    let mut excluded = code_and_fm;
    excluded.extend(s.links.iter().map(|l| l.range.clone()));
    excluded.extend(wikis.iter().map(|w| w.range.clone()));
    excluded.extend(regions::bare_urls(text));
    let excluded = regions::merge(excluded);

    let mut out = Vec::new();
    for w in wikis.iter().filter(|w| w.prefix == WikiPrefix::Hash) {
        let link_inside = s
            .links
            .iter()
            .any(|l| l.range.start <= w.range.start && w.range.end <= l.range.end);
        // The regions come from this text; a range that is not in it names no tag.
        let Some(inner) = text.get(w.inner.clone()).map(str::trim) else {
            continue;
        };
        if w.range.start >= s.body_start
            && !link_inside
            && may_follow(prev_char(text, w.range.start))
            && !inner.is_empty()
        {
            out.push(InlineTag {
                tag: inner.to_owned(),
                span: w.range.clone(),
            });
        }
    }
    for gap in regions::gaps(&excluded, text.len()) {
        let Some(segment) = text.get(gap.clone()) else {
            continue;
        };
        let mut from = 0;
        while let Some(rel) = segment.get(from..).and_then(|t| t.find('#')) {
            let at = gap.start + from + rel;
            from += rel + 1;
            if !may_follow(prev_char(text, at)) {
                continue;
            }
            let Some(body) = segment.get(from..) else {
                break;
            };
            let len: usize = body
                .chars()
                .take_while(|&c| is_tag_char(c))
                .map(char::len_utf8)
                .sum();
            // `len` is a sum of whole characters of `body`: the slice exists.
            let Some(tag) = body.get(..len).map(|t| t.trim_end_matches(['.', '/'])) else {
                break;
            };
            from += len;
            if tag.is_empty() || tag.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            out.push(InlineTag {
                tag: tag.to_owned(),
                span: at..at + 1 + tag.len(),
            });
        }
    }
    out.sort_by_key(|t| t.span.start);
    out
}

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.')
}

fn prev_char(text: &str, at: usize) -> Option<char> {
    text.get(..at).and_then(|t| t.chars().next_back())
}

/// What may stand right before a tag's `#`: nothing, whitespace, or opening punctuation.
fn may_follow(prev: Option<char>) -> bool {
    match prev {
        None => true,
        Some(c) => {
            c.is_whitespace()
                || matches!(
                    c,
                    '(' | ',' | ';' | '*' | '~' | '"' | '\'' | '>' | '{' | '|'
                )
        }
    }
}
