//! Setting and removing a note's properties in the form the note keeps them: its YAML
//! frontmatter, or a Logseq page's `key:: value` lines; a note with neither gets its dialect's
//! form ([`Dialect::properties_in_frontmatter`]). Only the named keys' text changes: every other
//! key, its order, comments and quoting stay byte for byte, and removing a key that a set added
//! gives back the note it was given. Each edit is read back before it is returned: a shape this
//! code misjudged is refused, never written.

use serde_json::{Map, Value};

use crate::block_parser;
use crate::dialect::Dialect;
use crate::error::MarkdownError;
use crate::frontmatter::{self, FrontmatterSpan};
use crate::lines;
use crate::page_props::{PageProps, page_props, remove_prop_line};
use crate::splice::{Edit, Span, apply, line_ending, newline};

/// Where a note keeps its properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyForm {
    /// YAML between `---` fences at the top.
    Frontmatter,
    /// `key:: value` lines of the first block (Logseq page properties).
    Logseq,
}

impl PropertyForm {
    pub fn as_str(self) -> &'static str {
        match self {
            PropertyForm::Frontmatter => "frontmatter",
            PropertyForm::Logseq => "logseq",
        }
    }
}

/// A named key's value before and after the edit, as the note reads (`None`: absent). Logseq
/// values read as their text.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyChange {
    pub key: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The edited note.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyEdit {
    pub text: String,
    pub form: PropertyForm,
    /// One per named key: the keys of `set` in order, then those of `remove`.
    pub changes: Vec<PropertyChange>,
}

/// Sets each key of `set` (a string, number, boolean, list of strings, or null: the key with an
/// empty value) and removes each key of `remove`, in the note's own form. An existing key keeps
/// its place, and a block list stays a block list; a new key goes after the others. Removing the
/// last key of a frontmatter removes the frontmatter; removing the last page property removes
/// its line and the blank line after it. A key named in both is refused.
pub fn set_properties(
    text: &str,
    dialect: &Dialect,
    set: &[(String, Value)],
    remove: &[String],
) -> Result<PropertyEdit, MarkdownError> {
    check_names(set, remove)?;
    let form = form_of(text, dialect)?;
    let before = read(text, form)?;
    let mut out = text.to_owned();
    for (key, value) in set {
        out = match form {
            PropertyForm::Frontmatter => yaml_set(&out, key, value)?,
            PropertyForm::Logseq => logseq_set(&out, key, &logseq_value(value)?)?,
        };
    }
    for key in remove {
        out = match form {
            PropertyForm::Frontmatter => yaml_remove(&out, key)?,
            PropertyForm::Logseq => logseq_remove(&out, key)?,
        };
    }
    let after = read(&out, form)?;
    reads_back(form, &before, &after, set, remove)?;
    let change = |key: &String| PropertyChange {
        key: key.clone(),
        before: lookup(&before, form, key),
        after: lookup(&after, form, key),
    };
    let changes = set
        .iter()
        .map(|(k, _)| k)
        .chain(remove)
        .map(change)
        .collect();
    Ok(PropertyEdit {
        text: out,
        form,
        changes,
    })
}

fn invalid(msg: impl Into<String>) -> MarkdownError {
    MarkdownError::InvalidProperty(msg.into())
}

fn unsupported(msg: impl Into<String>) -> MarkdownError {
    MarkdownError::UnsupportedProperty(msg.into())
}

/// Keys are one line of printable text, each named once; values are flat.
fn check_names(set: &[(String, Value)], remove: &[String]) -> Result<(), MarkdownError> {
    let names = set.iter().map(|(k, _)| k).chain(remove);
    for (i, key) in names.clone().enumerate() {
        if key.trim().is_empty() || key.trim() != key || key.chars().any(char::is_control) {
            return Err(invalid(format!(
                "key {key:?} is empty, has blanks around it or control characters"
            )));
        }
        if names.clone().take(i).any(|k| k == key) {
            return Err(invalid(format!("key `{key}` is named twice")));
        }
    }
    for (key, value) in set {
        let flat = |s: &str| {
            !s.chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        };
        let ok = match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => true,
            Value::String(s) => flat(s),
            Value::Array(items) => items.iter().all(|i| i.as_str().is_some_and(flat)),
            Value::Object(_) => false,
        };
        if !ok {
            return Err(invalid(format!(
                "`{key}`: a value is a string, number, boolean, list of strings or null, without control characters"
            )));
        }
    }
    Ok(())
}

/// The note's form: frontmatter if it has one, else Logseq page properties if its first block
/// has them (outside Logseq only as lines opening the page: a first list item's `key:: value`
/// there is a field of that item, Dataview's way), else the dialect's.
fn form_of(text: &str, dialect: &Dialect) -> Result<PropertyForm, MarkdownError> {
    if frontmatter::locate(text).is_some() {
        return Ok(PropertyForm::Frontmatter);
    }
    let logseq = !dialect.properties_in_frontmatter();
    if page_props(text, frontmatter::bom_len(text), "")?
        .is_some_and(|p| logseq || p.first_of_paragraph.is_some())
    {
        return Ok(PropertyForm::Logseq);
    }
    Ok(match dialect.properties_in_frontmatter() {
        true => PropertyForm::Frontmatter,
        false => PropertyForm::Logseq,
    })
}

/// The note's properties in `form`: the frontmatter's mapping, or the first block's
/// properties (keys lowercased as Logseq reads them, the first of a key kept).
fn read(text: &str, form: PropertyForm) -> Result<Map<String, Value>, MarkdownError> {
    match form {
        PropertyForm::Frontmatter => match frontmatter::parse(text)? {
            Some(Value::Object(map)) => Ok(map),
            _ => Ok(Map::new()),
        },
        PropertyForm::Logseq => {
            let mut map = Map::new();
            let blocks = block_parser::parse_blocks(text, frontmatter::body_start(text));
            for (k, v) in blocks
                .first()
                .map(|b| b.properties.as_slice())
                .unwrap_or(&[])
            {
                map.entry(k.to_lowercase())
                    .or_insert_with(|| Value::String(v.clone()));
            }
            Ok(map)
        }
    }
}

fn lookup(map: &Map<String, Value>, form: PropertyForm, key: &str) -> Option<Value> {
    match form {
        PropertyForm::Frontmatter => map.get(key).cloned(),
        PropertyForm::Logseq => map.get(&key.to_lowercase()).cloned(),
    }
}

/// The edited note reads as the note with the named keys changed and nothing else.
fn reads_back(
    form: PropertyForm,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    set: &[(String, Value)],
    remove: &[String],
) -> Result<(), MarkdownError> {
    let mut expected = before.clone();
    for (key, value) in set {
        let (k, v) = match form {
            PropertyForm::Frontmatter => (key.clone(), value.clone()),
            PropertyForm::Logseq => (key.to_lowercase(), Value::String(logseq_value(value)?)),
        };
        expected.insert(k, v);
    }
    for key in remove {
        match form {
            PropertyForm::Frontmatter => expected.shift_remove(key),
            PropertyForm::Logseq => expected.shift_remove(&key.to_lowercase()),
        };
    }
    let same = expected.len() == after.len()
        && expected
            .iter()
            .all(|(k, v)| after.get(k).is_some_and(|a| same_value(a, v)));
    if !same {
        return Err(unsupported("the edited properties do not read back as set"));
    }
    Ok(())
}

/// Equal values; numbers by value (`1.0` written reads back as `1`).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A top-level key of the frontmatter, located for an edit.
struct Entry {
    /// Where the key's line starts.
    line_start: usize,
    /// The value as written: from right after the `:` to its last byte (a comment after the
    /// value stays).
    value: Span,
    /// The indentation of a block list under the key (`- item` lines), if the value is one.
    block_indent: Option<String>,
    /// The start of the line after the value's last line.
    next: usize,
}

/// Locates `key` in the frontmatter with the YAML parser ([`frontmatter::key_span`]); refuses a
/// top-level key not at the start of its line (a flow mapping, `? key`).
fn entry(text: &str, span: &FrontmatterSpan, key: &str) -> Result<Option<Entry>, MarkdownError> {
    let base = span.yaml.start;
    let yaml = Span::from(span.yaml.clone()).of(text)?;
    let Some(at) = frontmatter::key_span(yaml, key)? else {
        return Ok(None);
    };
    let key_start = base + at.key.start;
    let line = lines::lines(text, base)
        .take_while(|l| l.start <= key_start)
        .last()
        .filter(|l| l.start == key_start)
        .ok_or_else(|| unsupported(format!("`{key}` is not at the start of its line")))?;
    let after_key = Span::new(base + at.key.end, line.end).of(text)?;
    let blanks = after_key.len() - after_key.trim_start_matches([' ', '\t']).len();
    let colon = base + at.key.end + blanks;
    if text.as_bytes().get(colon) != Some(&b':') {
        return Err(unsupported(format!(
            "`{key}` is written in a form this edit does not take"
        )));
    }
    let value_start = base + at.value.start;
    let value_end = (base + at.value.end).max(colon + 1);
    let last = lines::lines(text, line.start)
        .find(|l| l.start <= value_end && value_end <= l.end)
        .ok_or_else(|| unsupported(format!("the value of `{key}` runs past the frontmatter")))?;
    let block_indent = match text.as_bytes().get(value_start) {
        Some(b'-') if value_start > line.end => {
            let item_line = lines::lines(text, line.next)
                .find(|l| l.start <= value_start && value_start <= l.end)
                .map_or(value_start, |l| l.start);
            Some(Span::new(item_line, value_start).of(text)?.to_owned())
        }
        _ => None,
    };
    Ok(Some(Entry {
        line_start: line.start,
        value: Span::new(colon + 1, value_end),
        block_indent,
        next: last.next.min(span.yaml.end),
    }))
}

/// `text` with frontmatter key `key` set to `value`.
fn yaml_set(text: &str, key: &str, value: &Value) -> Result<String, MarkdownError> {
    let Some(span) = frontmatter::locate(text) else {
        let bom = frontmatter::bom_len(text);
        let (head, rest) = text.split_at_checked(bom).unwrap_or(("", text));
        let nl = line_ending(text);
        let line = format!("{}:{}", yaml_key(key), yaml_value(value, None, nl));
        return Ok(format!("{head}---{nl}{line}{nl}---{nl}{rest}"));
    };
    let nl = newline(text, &span);
    let edit = match entry(text, &span, key)? {
        Some(e) => Edit::replace(e.value, yaml_value(value, e.block_indent.as_deref(), nl)),
        None => {
            let line = format!("{}:{}{nl}", yaml_key(key), yaml_value(value, None, nl));
            Edit::insert(span.yaml.end, line)
        }
    };
    apply(text, vec![edit])
}

/// `text` without frontmatter key `key` (its lines); without the frontmatter when nothing but
/// blanks is left in it.
fn yaml_remove(text: &str, key: &str) -> Result<String, MarkdownError> {
    let Some(span) = frontmatter::locate(text) else {
        return Ok(text.to_owned());
    };
    let Some(e) = entry(text, &span, key)? else {
        return Ok(text.to_owned());
    };
    let before = Span::new(span.yaml.start, e.line_start).of(text)?;
    let after = Span::new(e.next, span.yaml.end).of(text)?;
    let gone = match before.trim().is_empty() && after.trim().is_empty() {
        true => Span::new(frontmatter::bom_len(text), span.body_start),
        false => Span::new(e.line_start, e.next),
    };
    apply(text, vec![Edit::delete(gone)])
}

/// A key as YAML writes it: plain when it reads back as itself, else double-quoted.
fn yaml_key(key: &str) -> String {
    match plain_ok(key, true) && !key.contains(':') {
        true => key.to_owned(),
        false => Value::String(key.to_owned()).to_string(),
    }
}

/// What follows a key's `:`: nothing for null, ` value`, ` [a, b]`, or the `- item` lines of a
/// block list with the indentation `block` (a list that was a block list stays one).
fn yaml_value(value: &Value, block: Option<&str>, nl: &str) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => format!(" {}", yaml_scalar(s, false)),
        Value::Array(items) => {
            let items: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            match block {
                Some(indent) if !items.is_empty() => items
                    .iter()
                    .map(|i| format!("{nl}{indent}- {}", yaml_scalar(i, false)))
                    .collect(),
                _ => {
                    let flow: Vec<String> = items.iter().map(|i| yaml_scalar(i, true)).collect();
                    format!(" [{}]", flow.join(", "))
                }
            }
        }
        other => format!(" {other}"),
    }
}

/// A string as a YAML scalar: plain when it reads back as the same string, else in double
/// quotes (JSON's escapes are YAML's).
fn yaml_scalar(s: &str, in_flow: bool) -> String {
    match plain_ok(s, in_flow) {
        true => s.to_owned(),
        false => Value::String(s.to_owned()).to_string(),
    }
}

/// Whether `s` written plain reads back as the string `s`: starts with a letter, digit or `_`,
/// holds no comment, no `: `, no control character (nor, in a flow list, `,[]{}`), and is not a
/// null, boolean or number.
fn plain_ok(s: &str, in_flow: bool) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
        && !s.ends_with([' ', ':'])
        && !s.contains(": ")
        && !s.contains(" #")
        && s.chars()
            .all(|c| !c.is_control() && c != '\u{feff}' && !(in_flow && ",[]{}".contains(c)))
        && frontmatter::resolve_plain(s) == Value::String(s.to_owned())
}

/// A value as a Logseq property writes it: one line; a list as Logseq writes one (`a, b`); null
/// and an empty list as an empty value.
fn logseq_value(value: &Value) -> Result<String, MarkdownError> {
    let one_line = |s: &str| -> Result<String, MarkdownError> {
        if s.contains(['\n', '\r']) || s.trim() != s {
            return Err(invalid(format!(
                "a Logseq property value is one line without blanks around it: {s:?}"
            )));
        }
        Ok(s.to_owned())
    };
    match value {
        Value::Null => Ok(String::new()),
        Value::String(s) => one_line(s),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for s in items.iter().filter_map(Value::as_str) {
                if s.is_empty() || s.contains(',') {
                    return Err(invalid(format!(
                        "an item of a Logseq list is not empty and holds no comma: {s:?}"
                    )));
                }
                out.push(one_line(s)?);
            }
            Ok(out.join(", "))
        }
        other => Ok(other.to_string()),
    }
}

/// A Logseq key: letters, digits, `_` and `-`, not first.
fn logseq_key(key: &str) -> Result<(), MarkdownError> {
    match lines::property(&format!("{key}::")) {
        Some((k, _)) if k == key => Ok(()),
        _ => Err(invalid(format!(
            "a Logseq property key is letters, digits, `_` and `-`: {key:?}"
        ))),
    }
}

fn logseq_line(key: &str, value: &str) -> String {
    match value.is_empty() {
        true => format!("{key}::"),
        false => format!("{key}:: {value}"),
    }
}

/// `text` with page property `key` set to `value` (as [`logseq_value`] wrote it).
fn logseq_set(text: &str, key: &str, value: &str) -> Result<String, MarkdownError> {
    logseq_key(key)?;
    let body = frontmatter::bom_len(text);
    let edit = match page_props(text, body, key)? {
        Some(PageProps { prop: Some(p), .. }) => {
            let sep = if p.value.start == p.value.end && !value.is_empty() {
                " "
            } else {
                ""
            };
            Edit::replace(p.value, format!("{sep}{value}"))
        }
        Some(props) => {
            let (l, indent) = (props.last, props.indent);
            match l.next > l.end {
                true => {
                    let nl = Span::new(l.end, l.next).of(text)?;
                    Edit::insert(l.next, format!("{indent}{}{nl}", logseq_line(key, value)))
                }
                false => {
                    let nl = line_ending(text);
                    Edit::insert(l.end, format!("{nl}{indent}{}", logseq_line(key, value)))
                }
            }
        }
        None => {
            let nl = line_ending(text);
            let gap = if text.len() > body { nl } else { "" };
            Edit::insert(body, format!("{}{nl}{gap}", logseq_line(key, value)))
        }
    };
    apply(text, vec![edit])
}

/// `text` without page property `key`: its line, and when it was the page's only property,
/// opening the note, the blank line after it.
fn logseq_remove(text: &str, key: &str) -> Result<String, MarkdownError> {
    let body = frontmatter::bom_len(text);
    let Some(props) = page_props(text, body, key)? else {
        return Ok(text.to_owned());
    };
    let Some(p) = &props.prop else {
        return Ok(text.to_owned());
    };
    let mut gone = remove_prop_line(text, p, props.next_own, props.next_is_inside)?;
    let alone = props.count == 1 && props.first_of_paragraph.is_some() && p.line.start == body;
    if alone
        && gone.end == p.line.next
        && let Some(blank) = lines::lines(text, gone.end).next()
        && lines::is_blank(Span::new(blank.start, blank.end).of(text)?)
    {
        gone.end = blank.next;
    }
    apply(text, vec![Edit::delete(gone)])
}
