//! The two tag edits (add to the page's tags, remove everywhere), each made as the smallest text
//! change, every other byte kept. Reading tags is `inline_tags.rs` (inline `#tag`) and the block
//! parser (page tags); the readers are re-exported here, so `tags` is where a caller finds both.

use std::ops::Range;

use serde_json::Value;

use crate::block_parser::{self, collect_list};
use crate::error::TagEditError;
use crate::frontmatter::{self, FrontmatterSpan};
use crate::inline_tags::inline_tags;
pub use crate::inline_tags::{extract_inline_tags, extract_inline_tags_as, normalize};
use crate::lines;
use crate::page_props::{PageProps, page_props, remove_prop_line, unsupported_props};
use crate::regions;
use crate::splice::{Edit, Item, Span, apply, line_ending, newline};

/// Adds `tag` to the note's page tags, in the form the note already uses. `Ok(None)` when the
/// note already has it (in frontmatter, in Logseq `tags::` on the first block, or as an inline
/// tag, case-insensitively). A frontmatter `tags`/`tag` key is edited first: the tag is appended
/// to a flow list (`tags: [a, b]`), a block list (a new `- tag` line with the list's
/// indentation), a scalar (`tags: a` becomes `tags: [a, tag]`), or fills an empty key. Otherwise a
/// Logseq `tags::` line on the first block gets the tag appended with the line's own separator
/// and item style (`tags:: a, [[b]]` becomes `tags:: a, [[b]], [[tag]]`). Otherwise frontmatter
/// gets a new `tags: [tag]` line at its end; a note without frontmatter whose first block has
/// Logseq properties gets a `tags:: tag` line (first among page properties written as a
/// paragraph, after a list item's properties when more text follows them); any other note gets
/// a new frontmatter block (`---`, `tags: [tag]`, `---`, with the note's line breaks). Every
/// other byte is unchanged.
pub fn add_tag(text: &str, tag: &str) -> Result<Option<String>, TagEditError> {
    let tag = valid_tag(tag)?;
    let key = tag.to_lowercase();
    let span = frontmatter::locate(text);
    let fm = match &span {
        Some(span) => Some(frontmatter::parse_yaml(
            Span::from(span.yaml.clone()).of(text)?,
        )?),
        None => None,
    };
    // Tagged already: frontmatter, Logseq `tags::` on the first block, or inline.
    if block_parser::parse_page(text, "")
        .tags
        .iter()
        .any(|t| t.to_lowercase() == key)
    {
        return Ok(None);
    }
    let item = yaml_item(&tag);
    let fm_key = match (&span, &fm) {
        (Some(span), Some(fm)) => match find_key(text, span, fm, "tags")? {
            Some(k) => Some(k),
            None => find_key(text, span, fm, "tag")?,
        },
        _ => None,
    };
    if fm_key.is_none() {
        let body_start = frontmatter::body_start_with(text, span.as_ref());
        let props = page_props(text, body_start, "tags")?;
        let logseq = match (&props, &span) {
            (Some(p), _) if p.prop.is_some() => true,
            // A new `tags::` line goes first in a paragraph of page properties, or after a list
            // item's properties when more text follows them (the note's end is never edited).
            (Some(p), None) => {
                p.first_of_paragraph.is_some()
                    || (p.last.next > p.last.end && p.last.next < text.len())
            }
            _ => false,
        };
        if let (Some(props), true) = (props, logseq) {
            return add_to_props(text, &props, &tag, &key).map(Some);
        }
    }
    let (Some(span), Some(_)) = (span, fm) else {
        let bom = frontmatter::bom_len(text);
        let (head, rest) = text.split_at_checked(bom).unwrap_or(("", text));
        let nl = line_ending(text);
        return Ok(Some(format!(
            "{head}---{nl}tags: [{item}]{nl}---{nl}{rest}"
        )));
    };
    let nl = newline(text, &span);
    let edits = match fm_key {
        None => {
            let end = span.yaml.end;
            let sep = if span.yaml.is_empty() || text.get(..end).is_some_and(|t| t.ends_with('\n'))
            {
                ""
            } else {
                nl
            };
            vec![Edit::insert(end, format!("{sep}tags: [{item}]{nl}"))]
        }
        Some(k) => match k.shape {
            Shape::Empty => vec![Edit::insert(k.colon + 1, format!(" [{item}]"))],
            Shape::Flow(f) => match (f.items.first(), f.items.last()) {
                (Some(_), Some(last)) => vec![Edit::insert(last.span.end, format!(", {item}"))],
                _ => vec![Edit::replace(
                    Span::new(f.open, f.close + 1),
                    format!("[{item}]"),
                )],
            },
            Shape::Block { items, indent } => {
                let at = items.last().map_or(k.line_next, |i| i.line_next);
                vec![Edit::insert(at, format!("{indent}- {item}{nl}"))]
            }
            Shape::Scalar { whole, items, .. } => {
                let mut list: Vec<String> = items.iter().map(|i| yaml_item(&i.value)).collect();
                list.push(item);
                vec![Edit::replace(whole, format!("[{}]", list.join(", ")))]
            }
        },
    };
    let out = apply(text, edits)?;
    // The edit is checked by reading it back: a shape this code misjudged is refused, not written.
    let check = frontmatter::parse(&out).ok().flatten();
    if !check.is_some_and(|fm| fm_tags(&fm).iter().any(|t| t.to_lowercase() == key)) {
        return Err(TagEditError::UnsupportedTags(
            "the edited frontmatter does not read back".to_owned(),
        ));
    }
    Ok(Some(out))
}

/// Removes `tag` (case-insensitively) from the page tags — frontmatter `tags`/`tag` and Logseq
/// `tags::` on the first block — and every inline `#tag` / `#[[tag]]` outside code; `#proj` never
/// touches `#project`. A frontmatter key whose list is left empty is removed with its lines, and
/// the whole frontmatter block when nothing else is left in it; a `tags::` line left empty is
/// removed with its line break. So removing the tag [`add_tag`] added gives back the note it was
/// given, byte for byte. An inline tag takes one neighbouring space with it. Returns the new text
/// and how many occurrences were removed (0: the text is returned unchanged).
pub fn remove_tag(text: &str, tag: &str) -> Result<(String, usize), TagEditError> {
    let tag = valid_tag(tag)?;
    let key = tag.to_lowercase();
    let matches = |v: &str| normalize(v).to_lowercase() == key;
    let mut removal = Removal {
        matches: &matches,
        edits: Vec::new(),
        count: 0,
    };
    let span = frontmatter::locate(text);
    let frontmatter = match &span {
        Some(span) => removal.in_frontmatter(text, span)?,
        None => FrontmatterAfter::Absent,
    };
    let body_start = frontmatter::body_start_with(text, span.as_ref());
    let property = removal.in_page_property(text, body_start)?;
    removal.in_text(text, &key, property)?;
    if removal.count == 0 {
        return Ok((text.to_owned(), 0));
    }
    let out = apply(text, removal.edits)?;
    reads_back_without(text, &out, &key, frontmatter, property.is_some())?;
    Ok((out, removal.count))
}

/// The edits of [`remove_tag`] as they are found, and how many occurrences they remove.
struct Removal<'m> {
    matches: &'m dyn Fn(&str) -> bool,
    edits: Vec<Edit>,
    count: usize,
}

/// What [`Removal::in_frontmatter`] left of the frontmatter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FrontmatterAfter {
    Absent,
    Edited,
    /// Nothing but the removed tags was in it: the whole block goes.
    Removed,
}

impl Removal<'_> {
    /// The tag's items in the frontmatter's `tags` and `tag` keys. A key whose value is left
    /// empty goes with its lines, and the whole frontmatter when nothing else is left in it.
    fn in_frontmatter(
        &mut self,
        text: &str,
        span: &FrontmatterSpan,
    ) -> Result<FrontmatterAfter, TagEditError> {
        let fm = frontmatter::parse_yaml(Span::from(span.yaml.clone()).of(text)?)?;
        // The lines of keys left empty, which go with their key.
        let mut emptied: Vec<Range<usize>> = Vec::new();
        for key_name in ["tags", "tag"] {
            if let Some(k) = find_key(text, span, &fm, key_name)? {
                emptied.extend(self.in_key(text, k));
            }
        }
        if emptied.is_empty() {
            return Ok(FrontmatterAfter::Edited);
        }
        let emptied = regions::merge(emptied);
        let rest = regions::gaps(&emptied, span.yaml.end);
        let mut only_tags = true;
        for r in rest.iter().filter(|r| r.end > span.yaml.start) {
            only_tags &= Span::new(r.start.max(span.yaml.start), r.end)
                .of(text)?
                .trim()
                .is_empty();
        }
        if only_tags {
            self.edits
                .push(Edit::delete(frontmatter::bom_len(text)..span.body_start));
            return Ok(FrontmatterAfter::Removed);
        }
        self.edits.extend(emptied.into_iter().map(Edit::delete));
        Ok(FrontmatterAfter::Edited)
    }

    /// The tag's items in one frontmatter key; the key's lines when every item goes.
    fn in_key(&mut self, text: &str, k: KeyLine) -> Option<Range<usize>> {
        let matches = self.matches;
        let extent = |end: usize| k.line_start..end;
        match k.shape {
            Shape::Empty => None,
            Shape::Flow(f) => {
                let n = f.items.iter().filter(|i| matches(&i.value)).count();
                self.count += n;
                if n > 0 && n == f.items.len() {
                    let end = lines::lines(text, k.line_start)
                        .find(|l| l.end >= f.close)
                        .map_or(k.line_next, |l| l.next);
                    return Some(extent(end));
                }
                let inner = Span::new(f.open + 1, f.close);
                remove_items(&f.items, matches, inner, "", &mut self.edits);
                None
            }
            Shape::Block { items, .. } => {
                let gone: Vec<&Item> = items.iter().filter(|i| matches(&i.value)).collect();
                self.count += gone.len();
                if !gone.is_empty() && gone.len() == items.len() {
                    let end = items.last().map_or(k.line_next, |i| i.line_next);
                    return Some(extent(end));
                }
                for i in &gone {
                    self.edits.push(Edit::delete(i.line_start..i.line_next));
                }
                None
            }
            Shape::Scalar { inner, items, .. } => {
                let n = items.iter().filter(|i| matches(&i.value)).count();
                self.count += n;
                if n > 0 && n == items.len() {
                    return Some(extent(k.line_next));
                }
                remove_items(&items, matches, inner, "", &mut self.edits);
                None
            }
        }
    }

    /// The tag's items in Logseq `tags::` on the first block; the line when every item goes.
    /// Returns the property's value, whose inline `#tag`s are its items.
    fn in_page_property(
        &mut self,
        text: &str,
        body_start: usize,
    ) -> Result<Option<Span>, TagEditError> {
        let Some(PageProps {
            prop: Some(p),
            next_own,
            next_is_inside,
            ..
        }) = page_props(text, body_start, "tags")?
        else {
            return Ok(None);
        };
        let n = p.items.iter().filter(|i| (self.matches)(&i.value)).count();
        if n > 0 && n == p.items.len() {
            let line = remove_prop_line(text, &p, next_own, next_is_inside)?;
            self.edits.push(Edit::delete(line));
        } else {
            remove_items(&p.items, self.matches, p.value, "", &mut self.edits);
        }
        self.count += n;
        Ok(Some(p.value))
    }

    /// Every inline `#tag` / `#[[tag]]` outside `property` (the `tags::` value, edited above),
    /// each with one neighbouring space.
    fn in_text(
        &mut self,
        text: &str,
        key: &str,
        property: Option<Span>,
    ) -> Result<(), TagEditError> {
        let bytes = text.as_bytes();
        for t in inline_tags(text)
            .into_iter()
            .filter(|t| t.tag.to_lowercase() == key)
        {
            let mut r = t.span.clone();
            if property.is_some_and(|v| v.start <= r.start && r.end <= v.end) {
                continue;
            }
            let before = r.start.checked_sub(1).and_then(|i| bytes.get(i)).copied();
            let after = bytes.get(r.end).copied();
            let after_is_end = matches!(after, None | Some(b'\n' | b'\r'));
            let after_is_space = matches!(after, Some(b' ' | b'\t'));
            if matches!(before, Some(b' ' | b'\t'))
                && (after_is_end
                    || after_is_space
                    || after.is_some_and(|b| b".,;:!?)".contains(&b)))
            {
                r.start -= 1;
            } else if matches!(before, None | Some(b'\n')) && after_is_space {
                r.end += 1;
            }
            // The span came from this text: checked here, so a wrong one is an error, not a cut.
            Span::from(r.clone()).of(text)?;
            self.edits.push(Edit::delete(r));
            self.count += 1;
        }
        Ok(())
    }
}

/// The edited text reads back as the note without the tag, and otherwise as it was: every other
/// inline tag as before (removing `#a` glued to `#b` would make `#b` a tag of its own), the
/// frontmatter still frontmatter (or, removed, not replaced by the body), the `tags::` property
/// without the tag.
fn reads_back_without(
    text: &str,
    out: &str,
    key: &str,
    frontmatter: FrontmatterAfter,
    had_property: bool,
) -> Result<(), TagEditError> {
    let others = |t: &str| -> Vec<String> {
        inline_tags(t)
            .into_iter()
            .map(|t| t.tag.to_lowercase())
            .collect()
    };
    let mut expected = others(text);
    expected.retain(|t| *t != key);
    if others(out) != expected {
        return Err(TagEditError::UnsupportedTags(
            "the tag is glued to the text after it".to_owned(),
        ));
    }
    match frontmatter {
        // What followed the frontmatter must not read as frontmatter now.
        FrontmatterAfter::Removed if frontmatter::locate(out).is_some() => {
            return Err(TagEditError::UnsupportedTags(
                "the note's body would read as frontmatter".to_owned(),
            ));
        }
        FrontmatterAfter::Edited => {
            let fm = frontmatter::parse(out).ok().flatten();
            if fm.is_none_or(|fm| fm_tags(&fm).iter().any(|t| t.to_lowercase() == key)) {
                return Err(TagEditError::UnsupportedTags(
                    "the edited frontmatter does not read back".to_owned(),
                ));
            }
        }
        _ => {}
    }
    if had_property
        && first_block_tags(out)
            .iter()
            .any(|t| t.to_lowercase() == key)
    {
        return Err(TagEditError::UnsupportedTags(
            "the edited `tags::` property does not read back".to_owned(),
        ));
    }
    Ok(())
}

/// The tags of the first block's `tags::` property of `text`.
fn first_block_tags(text: &str) -> Vec<String> {
    let body_start = frontmatter::body_start(text);
    let mut out = Vec::new();
    if let Some(b) = block_parser::parse_blocks(text, body_start).first() {
        for (k, v) in &b.properties {
            if k.eq_ignore_ascii_case("tags") {
                collect_list(&Value::String(v.clone()), true, &mut out);
            }
        }
    }
    out
}

/// Appends `tag` to the first block's `tags::` line, or adds a `tags::` line after its
/// properties.
fn add_to_props(
    text: &str,
    props: &PageProps,
    tag: &str,
    key: &str,
) -> Result<String, TagEditError> {
    // A comma or a bracket in the tag would split or end the item.
    if tag.contains([',', '[', ']']) {
        return Err(TagEditError::UnsupportedTags(
            "the tag cannot be written in a `tags::` property".to_owned(),
        ));
    }
    let edit = match &props.prop {
        Some(p) => {
            let v = p.value.of(text)?;
            let mut written = Vec::with_capacity(p.items.len());
            for i in &p.items {
                written.push(i.span.of(text)?);
            }
            let all =
                |f: &dyn Fn(&str) -> bool| !written.is_empty() && written.iter().all(|s| f(s));
            let item = if all(&|s| s.starts_with("[[")) {
                format!("[[{tag}]]")
            } else if all(&|s| s.starts_with('#')) {
                format!("#{tag}")
            } else {
                tag.to_owned()
            };
            if p.items.is_empty() {
                let sep = if p.value.start == p.line.end { " " } else { "" };
                Edit::insert(p.value.end, format!("{sep}{item}"))
            } else {
                let sep = if v.contains(", ") {
                    ", "
                } else if v.contains(',') {
                    ","
                } else if p.items.len() > 1 {
                    " "
                } else {
                    ", "
                };
                Edit::insert(p.value.end, format!("{sep}{item}"))
            }
        }
        None => {
            let l = props.last;
            let indent = &props.indent;
            if let Some(first) = props.first_of_paragraph {
                // Page properties: the new line goes first.
                let nl = match first.next > first.end {
                    true => Span::new(first.end, first.next).of(text)?,
                    false => line_ending(text),
                };
                Edit::insert(first.start, format!("{indent}tags:: {tag}{nl}"))
            } else if l.next > l.end && l.next < text.len() {
                let nl = Span::new(l.end, l.next).of(text)?;
                Edit::insert(l.next, format!("{indent}tags:: {tag}{nl}"))
            } else {
                return Err(unsupported_props());
            }
        }
    };
    let out = apply(text, vec![edit])?;
    if !first_block_tags(&out)
        .iter()
        .any(|t| t.to_lowercase() == key)
    {
        return Err(unsupported_props());
    }
    Ok(out)
}

/// Deletes the matching items of a comma- or space-separated run, each with one separator: the
/// one after it, or, when no kept item follows, the one after the last kept item before it. `inner` is the run's whole extent; when
/// every item goes, it is emptied (replaced by `empty`).
fn remove_items(
    items: &[Item],
    matches: &dyn Fn(&str) -> bool,
    inner: Span,
    empty: &str,
    edits: &mut Vec<Edit>,
) -> usize {
    let gone: Vec<bool> = items.iter().map(|i| matches(&i.value)).collect();
    let n = gone.iter().filter(|g| **g).count();
    if n == 0 {
        return 0;
    }
    if n == items.len() {
        edits.push(Edit::replace(inner, empty.to_owned()));
        return n;
    }
    for (i, item) in items.iter().enumerate() {
        if !gone.get(i).copied().unwrap_or(false) {
            continue;
        }
        let kept_after = gone.get(i + 1..).is_some_and(|g| g.iter().any(|x| !x));
        let kept_before = (0..i)
            .rev()
            .find(|&k| !gone.get(k).copied().unwrap_or(true));
        let r = match (
            kept_after,
            items.get(i + 1),
            kept_before.and_then(|k| items.get(k)),
        ) {
            (true, Some(next), _) => Span::new(item.span.start, next.span.start),
            (_, _, Some(prev)) => Span::new(prev.span.end, item.span.end),
            _ => item.span,
        };
        edits.push(Edit::delete(r));
    }
    n
}

fn valid_tag(tag: &str) -> Result<String, TagEditError> {
    let t = normalize(tag);
    if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TagEditError::InvalidTag(tag.to_owned()));
    }
    Ok(t)
}

/// Frontmatter tags (`tags` and `tag`), normalized.
fn fm_tags(fm: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["tags", "tag"] {
        if let Some(v) = fm.get(key) {
            collect_list(v, true, &mut out);
        }
    }
    out
}

/// The tag as a YAML flow-list item: plain when it reads back as the same string, else quoted.
fn yaml_item(tag: &str) -> String {
    let plain = tag
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
        && frontmatter::resolve_plain(tag) == Value::String(tag.to_owned());
    if plain {
        tag.to_owned()
    } else {
        Value::String(tag.to_owned()).to_string()
    }
}

struct Flow {
    open: usize,
    close: usize,
    items: Vec<Item>,
}

enum Shape {
    /// `tags:` with nothing after it and no list below.
    Empty,
    Flow(Flow),
    Block {
        items: Vec<Item>,
        indent: String,
    },
    /// `tags: a, b` or `tags: "a b"`: `whole` is the scalar with quotes, `inner` inside them.
    Scalar {
        whole: Span,
        inner: Span,
        items: Vec<Item>,
    },
}

struct KeyLine {
    /// Where the key's line starts.
    line_start: usize,
    /// Byte offset of the key's `:`.
    colon: usize,
    line_next: usize,
    shape: Shape,
}

/// Finds the top-level `key_name:` line of the frontmatter and reads its value's shape; `None`
/// when the frontmatter has no such key.
fn find_key(
    text: &str,
    span: &FrontmatterSpan,
    fm: &Value,
    key_name: &str,
) -> Result<Option<KeyLine>, TagEditError> {
    if fm.get(key_name).is_none() {
        return Ok(None);
    }
    let yaml_lines: Vec<lines::Line> = lines::lines(text, span.yaml.start)
        .take_while(|l| l.start < span.yaml.end)
        .collect();
    match fm.get(key_name) {
        Some(Value::Object(_)) => {
            return Err(TagEditError::UnsupportedTags(format!(
                "`{key_name}` is a mapping"
            )));
        }
        Some(Value::Array(items)) if items.iter().any(|i| i.is_array() || i.is_object()) => {
            return Err(TagEditError::UnsupportedTags(format!(
                "`{key_name}` holds nested lists"
            )));
        }
        _ => {}
    }
    let unsupported = || {
        TagEditError::UnsupportedTags(format!(
            "`{key_name}` is written in a form this edit does not handle"
        ))
    };
    // The key and its value are located by the YAML parser itself (`frontmatter::key_span`); a
    // top-level key written anywhere but at the start of its line (a flow mapping) is refused.
    let base = span.yaml.start;
    let yaml = Span::from(span.yaml.clone()).of(text)?;
    let Some(at) = frontmatter::key_span(yaml, key_name)? else {
        return Err(unsupported());
    };
    let key = Span::new(base + at.key.start, base + at.key.end);
    let value = Span::new(base + at.value.start, base + at.value.end);
    let Some((idx, line)) = yaml_lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.start == key.start)
    else {
        return Err(unsupported());
    };
    let blanks = Span::new(key.end, line.end).of(text)?;
    let colon = key.end + (blanks.len() - blanks.trim_start_matches([' ', '\t']).len());
    if text.as_bytes().get(colon) != Some(&b':') {
        return Err(unsupported());
    }
    let v_start = value.start;
    // A value that is not on the key's line is a block list below it (or nothing). On the line,
    // only blanks may stand between the `:` and the value (not an anchor or a tag).
    let first = if value.start == value.end || value.start >= line.end {
        None
    } else if !Span::new(colon + 1, v_start).of(text)?.trim().is_empty() {
        return Err(unsupported());
    } else {
        text.as_bytes().get(v_start).copied()
    };
    let shape = match first {
        None => {
            let rest = yaml_lines.get(idx + 1..).unwrap_or(&[]);
            block_items(text, rest)?.map_or(Shape::Empty, |(items, indent)| Shape::Block {
                items,
                indent,
            })
        }
        Some(b'[') => {
            Shape::Flow(flow_items(text, v_start, span.yaml.end)?.ok_or_else(unsupported)?)
        }
        Some(b'{' | b'|' | b'>' | b'&' | b'*' | b'!' | b'-' | b'?') => return Err(unsupported()),
        // A scalar: the parser's span is exact, quotes included, a comment never.
        Some(q @ (b'"' | b'\'')) => {
            if value.end < value.start + 2 || text.as_bytes().get(value.end - 1) != Some(&q) {
                return Err(unsupported());
            }
            let inner = Span::new(value.start + 1, value.end - 1);
            Shape::Scalar {
                whole: value,
                items: split_scalar(text, inner)?,
                inner,
            }
        }
        Some(_) => Shape::Scalar {
            whole: value,
            inner: value,
            items: split_scalar(text, value)?,
        },
    };
    // What the edit would see must be what the YAML parser saw: a value continued on the next
    // line (`tags:\n  a`), a tab-indented item or an escape this reader does not decode would
    // otherwise make the edit miss or damage the value. Such files are refused, not guessed at.
    if !shape_reads_as(text, &shape, fm.get(key_name))? {
        return Err(unsupported());
    }
    Ok(Some(KeyLine {
        line_start: line.start,
        colon,
        line_next: line.next,
        shape,
    }))
}

/// Whether the located shape holds the same value the YAML parser read for the key.
fn shape_reads_as(text: &str, shape: &Shape, value: Option<&Value>) -> Result<bool, TagEditError> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let same_items = |items: &[Item], list: &[Value]| {
        items.len() == list.len()
            && items
                .iter()
                .zip(list)
                .all(|(i, v)| scalar(v).is_some_and(|s| s == i.value))
    };
    Ok(match (shape, value) {
        (Shape::Empty, None | Some(Value::Null)) => true,
        (Shape::Flow(f), Some(Value::Array(list))) => same_items(&f.items, list),
        (Shape::Block { items, .. }, Some(Value::Array(list))) => same_items(items, list),
        (Shape::Scalar { whole, .. }, Some(v)) => {
            let written = unquote(whole.of(text)?);
            scalar(v).is_some_and(|s| written == s)
        }
        _ => false,
    })
}

/// The `- item` lines right under a key, and their indentation (`None`: no such line).
fn block_items(
    text: &str,
    rest: &[lines::Line],
) -> Result<Option<(Vec<Item>, String)>, TagEditError> {
    let mut items: Vec<Item> = Vec::new();
    let mut indent: Option<&str> = None;
    for l in rest {
        let s = Span::new(l.start, l.end).of(text)?;
        let t = s.trim_start_matches([' ', '\t']);
        let ind = Span::new(0, s.len() - t.len()).of(s)?;
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let is_item = t == "-" || t.starts_with("- ") || t.starts_with("-\t");
        match indent {
            Some(i) if is_item && ind == i => {}
            // A more indented line continues the previous item.
            Some(i) if ind.len() > i.len() => continue,
            Some(_) => break,
            None if is_item => indent = Some(ind),
            None => break,
        }
        let v_start = l.start + ind.len() + 1;
        // A quoted item ends at its closing quote (a `#` inside the quotes is no comment).
        let lead = t.len()
            - t.get(1..)
                .unwrap_or_default()
                .trim_start_matches([' ', '\t'])
                .len();
        let end = match text.as_bytes().get(l.start + ind.len() + lead) {
            Some(&q @ (b'"' | b'\'')) => {
                frontmatter::closing_quote(text, l.start + ind.len() + lead, q)
                    .filter(|&c| c < l.end)
                    .map_or(l.end, |c| c + 1)
            }
            _ => comment_start(text, v_start, l.end),
        };
        let raw = Span::new(v_start, end).of(text)?;
        let value = unquote(raw.trim());
        let lead = raw.len() - raw.trim_start().len();
        items.push(Item {
            span: Span::new(v_start + lead, v_start + raw.trim_end().len()),
            value,
            line_start: l.start,
            line_next: l.next,
        });
    }
    Ok(indent.map(|indent| (items, indent.to_owned())))
}

/// Items of a flow list starting at `open` (`[`); may span lines. `None` for a list this edit does
/// not take: unclosed, or with nested collections or comments.
fn flow_items(text: &str, open: usize, limit: usize) -> Result<Option<Flow>, TagEditError> {
    let bytes = text.as_bytes();
    let mut items = Vec::new();
    let mut i = open + 1;
    let mut item_start: Option<usize> = None;
    let push = |s: usize, e: usize, items: &mut Vec<Item>| -> Result<(), TagEditError> {
        let raw = Span::new(s, e).of(text)?;
        let t = raw.trim();
        if !t.is_empty() {
            let lead = raw.len() - raw.trim_start().len();
            items.push(Item {
                span: Span::new(s + lead, s + lead + t.len()),
                value: unquote(t),
                line_start: 0,
                line_next: 0,
            });
        }
        Ok(())
    };
    while i < limit {
        let Some(b) = bytes.get(i) else {
            return Ok(None);
        };
        match b {
            q @ (b'"' | b'\'')
                if item_start
                    .is_none_or(|s| text.get(s..i).is_some_and(|t| t.trim().is_empty())) =>
            {
                let Some(close) = frontmatter::closing_quote(text, i, *q).filter(|&c| c < limit)
                else {
                    return Ok(None);
                };
                item_start.get_or_insert(i);
                i = close + 1;
                continue;
            }
            b',' => {
                if let Some(s) = item_start.take() {
                    push(s, i, &mut items)?;
                }
            }
            b']' => {
                if let Some(s) = item_start.take() {
                    push(s, i, &mut items)?;
                }
                return Ok(Some(Flow {
                    open,
                    close: i,
                    items,
                }));
            }
            b'[' | b'{' | b'#' => return Ok(None),
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => {
                item_start.get_or_insert(i);
            }
        }
        i += 1;
    }
    Ok(None)
}

/// Where a ` #` comment starts on a plain-scalar line (or `end`).
fn comment_start(text: &str, from: usize, end: usize) -> usize {
    let bytes = text.as_bytes();
    (from..end)
        .find(|&i| {
            bytes.get(i) == Some(&b'#')
                && (i == from || matches!(bytes.get(i - 1), Some(b' ' | b'\t')))
        })
        .unwrap_or(end)
}

/// The comma- or space-separated words of a string value, with their spans.
fn split_scalar(text: &str, inner: Span) -> Result<Vec<Item>, TagEditError> {
    let mut items = Vec::new();
    let s = inner.of(text)?;
    let mut start: Option<usize> = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ','))) {
        let sep = c == ',' || c.is_whitespace();
        match (sep, start) {
            (true, Some(st)) => {
                let word = Span::new(st, i).of(s)?;
                items.push(Item {
                    span: Span::new(inner.start + st, inner.start + i),
                    value: word.to_owned(),
                    line_start: 0,
                    line_next: 0,
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    Ok(items)
}

fn unquote(s: &str) -> String {
    if let Some(inner) = s.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        serde_json::from_str::<String>(s).unwrap_or_else(|_| inner.to_owned())
    } else if let Some(inner) = s.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        inner.replace("''", "'")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_outside_the_text_is_an_error_not_an_empty_string() {
        let text = "tags: [ä]";
        assert_eq!(Span::new(7, 9).of(text), Ok("ä"));
        // Inside a character, and past the end: the edit is refused, naming the bytes.
        assert_eq!(
            Span::new(7, 8).of(text),
            Err(TagEditError::LostPlace { start: 7, end: 8 })
        );
        assert_eq!(
            apply(text, vec![Edit::delete(9..12)]),
            Err(TagEditError::LostPlace { start: 12, end: 10 })
        );
        assert_eq!(
            TagEditError::LostPlace { start: 0, end: 1 }.kind(),
            pkm_core::ErrorKind::Internal
        );
    }
}
