//! The Logseq properties of a note's first block as the tag and property editors see them: which
//! lines they stand on, where a new one goes, and what removing one takes with it.

use crate::block_parser::{self, BlockKind, PropertySpan};
use crate::error::TagEditError;
use crate::lines;
use crate::splice::{Item, Span};

/// The Logseq properties of a note's first block, as the block parser reads them: leading
/// `key:: value` lines of a first paragraph, or the property lines of a first list item (on its
/// bullet line and the lines right after it).
pub(crate) struct PageProps {
    /// The last property line.
    pub(crate) last: lines::Line,
    /// What stands before the key on a new property line after `last`.
    pub(crate) indent: String,
    /// The first property line, when the properties are a paragraph's (not a list item's).
    pub(crate) first_of_paragraph: Option<lines::Line>,
    /// How many properties the block has.
    pub(crate) count: usize,
    /// The line of the property asked for (the first of that key, case-insensitively).
    pub(crate) prop: Option<PropLine>,
    /// The block's own line right after that property's line, if that is a property line too.
    pub(crate) next_own: Option<lines::Line>,
    /// The line after that property's line is indented under it (a child or more text).
    pub(crate) next_is_inside: bool,
}

/// A `key:: value` line (`tags::`, say).
pub(crate) struct PropLine {
    pub(crate) line: lines::Line,
    /// Where the key starts; for `- tags:: a`, where the bullet ends too.
    pub(crate) key_start: usize,
    /// The property is on the block's bullet line.
    pub(crate) on_bullet: bool,
    /// The value, trimmed (empty, at the key's end, for `tags::` alone).
    pub(crate) value: Span,
    /// The value's items as references or tags (`a, [[b]], #c`).
    pub(crate) items: Vec<Item>,
}

/// Reads [`PageProps`] of the first block of `text[body_start..]`, as the block parser found
/// them, with the line of property `key`. `Ok(None)` when the first block has no properties.
pub(crate) fn page_props(
    text: &str,
    body_start: usize,
    key: &str,
) -> Result<Option<PageProps>, TagEditError> {
    let blocks = block_parser::parse_blocks(text, body_start);
    let Some(block) = blocks.first() else {
        return Ok(None);
    };
    let line_at = |at: usize| {
        lines::lines(text, body_start)
            .find(|l| l.start <= at && at <= l.end)
            .ok_or_else(unsupported_props)
    };
    let mut props: Vec<(lines::Line, &PropertySpan)> = Vec::new();
    for span in &block.property_spans {
        props.push((line_at(span.key.start)?, span));
    }
    let Some(&(last, _)) = props.last() else {
        return Ok(None);
    };
    // The block's first line: a list item's bullet line, or the paragraph's first property.
    let first = line_at(block.range.start)?;
    let list_item = block.kind == BlockKind::ListItem;
    let s = text
        .get(first.start..first.end)
        .ok_or_else(unsupported_props)?;
    let (cols, ibytes) = lines::indent(s);
    let lead = s.get(..ibytes).ok_or_else(unsupported_props)?;
    // What stands before the key on a new property line: a list item's text column (the bullet
    // line's indentation, then spaces under the bullet), or a paragraph's indentation.
    let indent = match list_item {
        true => {
            let after = s.get(ibytes..).ok_or_else(unsupported_props)?;
            let bullet = lines::bullet(after, cols).ok_or_else(unsupported_props)?;
            format!("{lead}{}", " ".repeat(bullet.content_offset_cols))
        }
        false => lead.to_owned(),
    };
    let after_props = lines::lines(text, last.next)
        .next()
        .filter(|_| last.next > last.end);
    let mut prop = None;
    let mut next_own = None;
    let mut next_line = after_props;
    if let Some(i) = block
        .properties
        .iter()
        .position(|(k, _)| k.eq_ignore_ascii_case(key))
        && let Some(&(line, span)) = props.get(i)
    {
        let value = Span::from(span.value.clone());
        prop = Some(PropLine {
            line,
            key_start: span.key.start,
            on_bullet: list_item && line.start == first.start,
            items: block_parser::ref_items(value.of(text)?, true)
                .into_iter()
                .map(|(r, v)| Item {
                    span: Span::new(value.start + r.start, value.start + r.end),
                    value: v,
                    line_start: 0,
                    line_next: 0,
                })
                .collect(),
            value,
        });
        next_own = props.get(i + 1).map(|(l, _)| *l);
        next_line = next_own.or(after_props);
    }
    let next_is_inside = next_line.is_some_and(|n| {
        text.get(n.start..n.end)
            .is_some_and(|s| !lines::is_blank(s) && lines::indent(s).0 > cols)
    });
    Ok(Some(PageProps {
        last,
        indent,
        first_of_paragraph: (!list_item).then_some(first),
        count: props.len(),
        prop,
        next_own,
        next_is_inside,
    }))
}

pub(crate) fn unsupported_props() -> TagEditError {
    TagEditError::UnsupportedTags(
        "the page properties are written in a form this edit does not handle".to_owned(),
    )
}

/// The range that removes a property line (a `tags::` line left empty, say): the line with its line break (or, on the
/// text's last line, with the break before it). On a bullet line the bullet stays: the next
/// property line moves up onto it, or, when children or text follow, the bullet is left empty.
pub(crate) fn remove_prop_line(
    text: &str,
    p: &PropLine,
    next_own: Option<lines::Line>,
    next_is_inside: bool,
) -> Result<Span, TagEditError> {
    let l = p.line;
    if p.on_bullet {
        if let Some(n) = next_own {
            let s = Span::new(n.start, n.end).of(text)?;
            return Ok(Span::new(p.key_start, n.start + lines::indent(s).1));
        }
        if next_is_inside {
            // `- tags:: a` becomes `-`.
            let before = Span::new(l.start, p.key_start).of(text)?;
            let kept = before.trim_end_matches([' ', '\t']).len();
            return Ok(Span::new(l.start + kept, l.end));
        }
    }
    if l.next > l.end {
        return Ok(Span::new(l.start, l.next));
    }
    let prev_end = text
        .get(..l.start)
        .map(|t| {
            t.strip_suffix("\r\n")
                .or_else(|| t.strip_suffix(['\n', '\r']))
                .unwrap_or(t)
                .len()
        })
        .unwrap_or(l.start);
    Ok(Span::new(prev_end, l.end))
}
