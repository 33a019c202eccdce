//! The text edits every editor of this crate makes (tags, properties, `kb_edit_page`'s edit
//! lists): a checked span of the note, one change (replace a span), applying a set of them, and
//! the note's line ending.

use std::ops::Range;

use crate::error::TagEditError;
use crate::frontmatter::FrontmatterSpan;

/// The line ending the editors of this crate write: `\r\n` when the note's first line ends so,
/// else `\n`. A note whose lines end in a lone `\r` (classic Mac OS) gets `\n`: a frontmatter
/// fence must end in `\n` to be one, and every reader takes `\n` as a line end.
pub fn line_ending(text: &str) -> &'static str {
    match text.find(['\n', '\r']) {
        Some(i) if text.get(i..i + 2) == Some("\r\n") => "\r\n",
        _ => "\n",
    }
}

/// The frontmatter's line break: the one its opening fence ends with.
pub(crate) fn newline(text: &str, span: &FrontmatterSpan) -> &'static str {
    if text
        .get(..span.yaml.start)
        .is_some_and(|t| t.ends_with("\r\n"))
    {
        "\r\n"
    } else {
        "\n"
    }
}

/// A byte range of the note's text that an edit (of tags, of properties) located. Every slice of the text an edit
/// reads or keeps is taken through [`Span::of`], the one place an offset is checked: an offset
/// that is off is an error of the edit ([`TagEditError::LostPlace`]), never an empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The text the span covers in `text`.
    pub(crate) fn of(self, text: &str) -> Result<&str, TagEditError> {
        text.get(self.start..self.end)
            .ok_or(TagEditError::LostPlace {
                start: self.start,
                end: self.end,
            })
    }
}

impl From<Range<usize>> for Span {
    fn from(r: Range<usize>) -> Span {
        Span::new(r.start, r.end)
    }
}

/// One text change: replace `span` with `text`.
pub(crate) struct Edit {
    pub(crate) span: Span,
    pub(crate) text: String,
}

impl Edit {
    pub(crate) fn insert(at: usize, text: String) -> Edit {
        Edit {
            span: Span::new(at, at),
            text,
        }
    }
    pub(crate) fn delete(span: impl Into<Span>) -> Edit {
        Edit {
            span: span.into(),
            text: String::new(),
        }
    }
    pub(crate) fn replace(span: Span, text: String) -> Edit {
        Edit { span, text }
    }
}

/// Applies edits; overlapping deletions are merged, and an edit overlapping an earlier one is
/// folded into it (the text of both is kept, in order).
pub(crate) fn apply(text: &str, mut edits: Vec<Edit>) -> Result<String, TagEditError> {
    edits.sort_by_key(|e| (e.span.start, e.span.end));
    let mut out = String::with_capacity(text.len() + 64);
    let mut pos = 0;
    for e in edits {
        let start = e.span.start.max(pos);
        out.push_str(Span::new(pos, start).of(text)?);
        out.push_str(&e.text);
        pos = pos.max(e.span.end);
    }
    out.push_str(Span::new(pos, text.len()).of(text)?);
    Ok(out)
}

/// One item of a list value (a tag list, a `tags::` value): its source span and its unquoted text.
#[derive(Debug)]
pub(crate) struct Item {
    pub(crate) span: Span,
    pub(crate) value: String,
    /// For block-list items: the whole line, line break included.
    pub(crate) line_start: usize,
    pub(crate) line_next: usize,
}
