//! YAML frontmatter: find it at the top of a note and turn it into JSON, refusing hostile input.
//!
//! The JSON value is built from saphyr-parser's event stream with an explicit stack, so nesting
//! costs heap, not call stack, and every node (each alias expansion counted in full) is counted
//! against [`MAX_NODES`] before it is copied. An alias bomb therefore stops at the limit instead of
//! growing exponentially, and `[[[[…` stops at [`MAX_DEPTH`].

use std::collections::HashMap;
use std::ops::Range;

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::{Map, Number, Value};

pub use crate::error::FrontmatterError;

/// Deepest nesting of sequences and mappings accepted (alias expansions included).
pub const MAX_DEPTH: usize = 64;
/// Most nodes accepted, counting every node an alias expands to.
pub const MAX_NODES: usize = 100_000;
/// Longest YAML text accepted, in bytes.
pub const MAX_YAML_BYTES: usize = 1 << 20;

/// Located YAML frontmatter: `---\n ... \n---\n` at byte 0 of the file (also accepts `\r\n` and a
/// leading byte-order mark).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterSpan {
    /// The YAML text between the fences, including the line break that ends its last line (so
    /// `---\n` + yaml + `---\n` rebuilds the block). Empty for `---\n---\n`.
    pub yaml: Range<usize>,
    /// First byte after the closing fence's line break (the text's length if the fence ends it).
    pub body_start: usize,
}

/// Where the body of a note starts: after its frontmatter, else after a byte-order mark, else 0.
/// Blocks, page properties and links are looked for from here.
pub fn body_start(text: &str) -> usize {
    body_start_with(text, locate(text).as_ref())
}

/// [`body_start`] for a caller that has located the frontmatter already (`span` is
/// `locate(text)`).
pub fn body_start_with(text: &str, span: Option<&FrontmatterSpan>) -> usize {
    span.map_or_else(|| bom_len(text), |s| s.body_start)
}

/// The length of the byte-order mark `text` starts with (0 without one).
pub(crate) fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

/// Finds frontmatter at the very start of `text`: an opening `---` line, then a closing `---`
/// line (trailing spaces allowed). Without a closing fence there is no frontmatter.
pub fn locate(text: &str) -> Option<FrontmatterSpan> {
    let bom = bom_len(text);
    let rest = text.get(bom..)?;
    let open = if rest.starts_with("---\n") {
        4
    } else if rest.starts_with("---\r\n") {
        5
    } else {
        return None;
    };
    let yaml_start = bom + open;
    let mut pos = yaml_start;
    loop {
        let tail = text.get(pos..)?;
        let (line, next) = match tail.find('\n') {
            Some(i) => (tail.get(..i)?, pos + i + 1),
            None => (tail, text.len()),
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_end_matches([' ', '\t']) == "---" {
            return Some(FrontmatterSpan {
                yaml: yaml_start..pos,
                body_start: next,
            });
        }
        if next >= text.len() {
            return None;
        }
        pos = next;
    }
}

/// Locates and parses frontmatter. `Ok(None)` when the note has none.
pub fn parse(text: &str) -> Result<Option<Value>, FrontmatterError> {
    match locate(text) {
        None => Ok(None),
        Some(span) => parse_yaml(text.get(span.yaml).unwrap_or_default()).map(Some),
    }
}

/// An anchored value kept for its aliases, with what expanding it costs.
struct Anchored {
    value: Value,
    nodes: usize,
    depth: usize,
}

/// A collection being built.
enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
        first_node: usize,
        depth: usize,
    },
    Map {
        map: Map<String, Value>,
        key: Option<String>,
        anchor: usize,
        first_node: usize,
        depth: usize,
    },
}

impl Frame {
    fn anchor_info(&self) -> (usize, usize, usize) {
        match self {
            Frame::Seq {
                anchor,
                first_node,
                depth,
                ..
            }
            | Frame::Map {
                anchor,
                first_node,
                depth,
                ..
            } => (*anchor, *first_node, *depth),
        }
    }
}

struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    nodes: usize,
    root: Option<Value>,
    documents: usize,
}

impl Builder {
    fn count(&mut self, n: usize) -> Result<(), FrontmatterError> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            Err(FrontmatterError::TooManyNodes { max: MAX_NODES })
        } else {
            Ok(())
        }
    }

    fn in_key_position(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    /// Places a finished value (of nesting depth `depth`) into the collection on top of the stack.
    fn emit(&mut self, value: Value, depth: usize) -> Result<(), FrontmatterError> {
        match self.stack.last_mut() {
            None => {
                if self.root.is_some() {
                    return Err(FrontmatterError::MultipleDocuments);
                }
                self.root = Some(value);
            }
            Some(Frame::Seq {
                items, depth: d, ..
            }) => {
                items.push(value);
                *d = (*d).max(depth + 1);
            }
            Some(Frame::Map {
                map, key, depth: d, ..
            }) => match key.take() {
                None => {
                    *key = Some(match value {
                        Value::String(s) => s,
                        Value::Null => "null".to_owned(),
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => n.to_string(),
                        Value::Array(_) | Value::Object(_) => {
                            return Err(FrontmatterError::ComplexKey);
                        }
                    });
                }
                Some(k) => {
                    if map.contains_key(&k) {
                        return Err(FrontmatterError::DuplicateKey(k));
                    }
                    map.insert(k, value);
                    *d = (*d).max(depth + 1);
                }
            },
        }
        Ok(())
    }

    fn open(&mut self, frame: Frame) -> Result<(), FrontmatterError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(FrontmatterError::TooDeep { max: MAX_DEPTH });
        }
        self.count(1)?;
        self.stack.push(frame);
        Ok(())
    }

    fn close(&mut self) -> Result<(), FrontmatterError> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let (anchor, first_node, depth) = frame.anchor_info();
        let value = match frame {
            Frame::Seq { items, .. } => Value::Array(items),
            Frame::Map { mut map, key, .. } => {
                // `key:` at the end of a mapping with no value is a null value.
                if let Some(k) = key {
                    if map.contains_key(&k) {
                        return Err(FrontmatterError::DuplicateKey(k));
                    }
                    map.insert(k, Value::Null);
                }
                Value::Object(map)
            }
        };
        let depth = depth.max(1);
        if anchor != 0 {
            let nodes = self.nodes.saturating_sub(first_node);
            self.anchors.insert(
                anchor,
                Anchored {
                    value: value.clone(),
                    nodes,
                    depth,
                },
            );
        }
        self.emit(value, depth)
    }
}

/// Parses YAML into JSON. The top level must be a mapping (an empty document is an empty
/// mapping). Plain scalars resolve per the YAML 1.2 core schema; quoted and block scalars stay
/// strings, as do dates and `.inf`/`.nan` (JSON has no such numbers).
pub fn parse_yaml(yaml: &str) -> Result<Value, FrontmatterError> {
    let mut b = Builder {
        stack: Vec::new(),
        anchors: HashMap::new(),
        nodes: 0,
        root: None,
        documents: 0,
    };
    for event in events(yaml)? {
        let (event, _span) = event?;
        match event {
            Event::DocumentStart(_) => {
                b.documents += 1;
                if b.documents > 1 {
                    return Err(FrontmatterError::MultipleDocuments);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                b.count(1)?;
                let value = if b.in_key_position() {
                    Value::String(text.into_owned())
                } else {
                    resolve_scalar(&text, style, tag.as_deref())
                };
                if anchor != 0 {
                    b.anchors.insert(
                        anchor,
                        Anchored {
                            value: value.clone(),
                            nodes: 1,
                            depth: 0,
                        },
                    );
                }
                b.emit(value, 0)?;
            }
            Event::Alias(id) => {
                let Some(a) = b.anchors.get(&id) else {
                    return Err(FrontmatterError::UnknownAlias);
                };
                let (nodes, depth) = (a.nodes, a.depth);
                // Checked before the copy is made: this is what stops an alias bomb.
                b.count(nodes)?;
                if b.stack.len() + depth > MAX_DEPTH {
                    return Err(FrontmatterError::TooDeep { max: MAX_DEPTH });
                }
                let value = b
                    .anchors
                    .get(&id)
                    .map(|a| a.value.clone())
                    .unwrap_or(Value::Null);
                b.emit(value, depth)?;
            }
            Event::SequenceStart(anchor, _) => {
                let first_node = b.nodes;
                b.open(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                    first_node,
                    depth: 1,
                })?;
            }
            Event::MappingStart(anchor, _) => {
                let first_node = b.nodes;
                b.open(Frame::Map {
                    map: Map::new(),
                    key: None,
                    anchor,
                    first_node,
                    depth: 1,
                })?;
            }
            Event::SequenceEnd | Event::MappingEnd => b.close()?,
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
    match b.root {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(FrontmatterError::NotAMapping),
    }
}

/// The YAML parser's events over `yaml`, the one way this crate reads YAML: [`parse_yaml`] builds
/// values from them and [`key_span`] locates a key with them. Longer text than
/// [`MAX_YAML_BYTES`] is refused before any parsing.
fn events(
    yaml: &str,
) -> Result<
    impl Iterator<Item = Result<(Event<'_>, saphyr_parser::Span), FrontmatterError>>,
    FrontmatterError,
> {
    if yaml.len() > MAX_YAML_BYTES {
        return Err(FrontmatterError::TooLarge {
            len: yaml.len(),
            max: MAX_YAML_BYTES,
        });
    }
    Ok(Parser::new_from_str(yaml).map(|event| {
        event.map_err(|e| FrontmatterError::Syntax {
            message: e.info().to_owned(),
            line: e.marker().line(),
            col: e.marker().col() + 1,
        })
    }))
}

/// Where a top-level key of a frontmatter's YAML stands, and its value: byte ranges into the YAML
/// text (the parser counts characters; these are converted to bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpan {
    /// The key as written, its quotes included.
    pub key: Range<usize>,
    /// The value as written, from its first byte (`[`, `-` of a block list's first item, a
    /// quote, a plain scalar's first character) to the end of its last scalar or closing bracket:
    /// quotes included, a trailing `# comment` and blanks never. A key with no value has an empty
    /// range at the end of the key.
    pub value: Range<usize>,
}

/// Locates the top-level key `name` of `yaml` (a frontmatter's text, a mapping) and its value
/// with the parser [`parse_yaml`] reads it with. `Ok(None)` when the mapping has no such key (the
/// first one counts; [`parse_yaml`] refuses duplicates). Errors are [`parse_yaml`]'s for text it
/// cannot read.
pub fn key_span(yaml: &str, name: &str) -> Result<Option<KeySpan>, FrontmatterError> {
    let mut bytes = ByteOffsets::new(yaml);
    // Collections open around the current event; the root mapping's entries are at depth 1.
    let mut depth = 0usize;
    // At depth 1: whether the next node is a key.
    let mut expect_key = true;
    // The key, once found, until its value is read.
    let mut key: Option<Range<usize>> = None;
    // The value being read (a collection: until it closes).
    let mut value: Option<Range<usize>> = None;
    for event in events(yaml)? {
        let (event, span) = event?;
        let (Some(start), Some(end)) = (bytes.at(span.start.index()), bytes.at(span.end.index()))
        else {
            return Ok(None);
        };
        let reach = match &event {
            Event::Scalar(..) | Event::Alias(_) => Some(exact_end(yaml, start, end)),
            Event::SequenceEnd | Event::MappingEnd
                if matches!(yaml.as_bytes().get(start), Some(b']' | b'}')) =>
            {
                Some(start + 1)
            }
            _ => None,
        };
        if let (Some(v), Some(r)) = (value.as_mut(), reach) {
            v.end = v.end.max(r);
        }
        let node = matches!(
            event,
            Event::Scalar(..)
                | Event::Alias(_)
                | Event::SequenceStart(..)
                | Event::MappingStart(..)
        );
        if depth == 1 && node {
            match (expect_key, &key) {
                (true, None) => {
                    if let Event::Scalar(text, ..) = &event
                        && text == name
                    {
                        key = Some(start..reach.unwrap_or(end));
                    }
                }
                (false, Some(k)) => {
                    let span = match &event {
                        // `key:` alone: an empty value where the key ends.
                        Event::Scalar(t, ScalarStyle::Plain, ..) if t.is_empty() => k.end..k.end,
                        _ => start..reach.unwrap_or(start),
                    };
                    if reach.is_some() {
                        return Ok(Some(KeySpan {
                            key: k.clone(),
                            value: span,
                        }));
                    }
                    value = Some(span);
                }
                _ => {}
            }
        }
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => depth += 1,
            Event::SequenceEnd | Event::MappingEnd => {
                depth = depth.saturating_sub(1);
                if depth == 1 {
                    if let (Some(key), Some(value)) = (key.clone(), value.clone()) {
                        return Ok(Some(KeySpan { key, value }));
                    }
                    expect_key = !expect_key;
                }
            }
            Event::Scalar(..) | Event::Alias(_) if depth == 1 => expect_key = !expect_key,
            _ => {}
        }
    }
    Ok(None)
}

/// The end of the scalar the parser placed at `start..end`: for a quoted scalar the byte after
/// its closing quote (the parser's own end runs on over blanks and a trailing `# comment`),
/// otherwise `end` without trailing blanks.
fn exact_end(yaml: &str, start: usize, end: usize) -> usize {
    match yaml.as_bytes().get(start) {
        Some(&q @ (b'"' | b'\'')) => closing_quote(yaml, start, q).map_or(end, |c| c + 1),
        _ => {
            let s = yaml.get(start..end).unwrap_or_default();
            start + s.trim_end().len()
        }
    }
}

/// The closing quote (`q`, `"` or `'`) of the quoted scalar opened at byte `open`: `\"` escapes
/// a double quote, `''` stands for a single one.
pub(crate) fn closing_quote(text: &str, open: usize, q: u8) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = open + 1;
    loop {
        let c = *bytes.get(i)?;
        if q == b'"' && c == b'\\' {
            i += 2;
            continue;
        }
        if c == q {
            if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
}

/// Turns the parser's character indices into byte offsets, walking forward from the last one.
struct ByteOffsets<'a> {
    text: &'a str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'a> ByteOffsets<'a> {
    fn new(text: &'a str) -> ByteOffsets<'a> {
        ByteOffsets {
            text,
            ascii: text.is_ascii(),
            chars: 0,
            bytes: 0,
        }
    }

    /// The byte offset of character `index` (the text's length for the index just past its end).
    fn at(&mut self, index: usize) -> Option<usize> {
        if self.ascii {
            return (index <= self.text.len()).then_some(index);
        }
        if index < self.chars {
            self.chars = 0;
            self.bytes = 0;
        }
        let rest = self.text.get(self.bytes..)?;
        let mut ahead = rest.char_indices().map(|(b, _)| b).chain([rest.len()]);
        let b = ahead.nth(index - self.chars)?;
        self.chars = index;
        self.bytes += b;
        Some(self.bytes)
    }
}

fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    if let Some(tag) = tag.filter(|t| t.is_yaml_core_schema()) {
        return match tag.suffix.as_str() {
            "str" => Value::String(text.to_owned()),
            "null" => Value::Null,
            "bool" | "int" | "float" => match resolve_plain(text) {
                v @ (Value::Bool(_) | Value::Number(_)) => v,
                _ => Value::String(text.to_owned()),
            },
            _ => Value::String(text.to_owned()),
        };
    }
    match style {
        ScalarStyle::Plain => resolve_plain(text),
        _ => Value::String(text.to_owned()),
    }
}

/// YAML 1.2 core schema resolution of a plain scalar.
pub(crate) fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Some(digits) = s.strip_prefix("0o") {
        if !digits.is_empty()
            && digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
            && let Ok(n) = u64::from_str_radix(digits, 8)
        {
            return Value::Number(n.into());
        }
        return Value::String(s.to_owned());
    }
    if let Some(digits) = s.strip_prefix("0x") {
        if !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_hexdigit())
            && let Ok(n) = u64::from_str_radix(digits, 16)
        {
            return Value::Number(n.into());
        }
        return Value::String(s.to_owned());
    }
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        let signed = s.strip_prefix('+').unwrap_or(s);
        if let Ok(n) = signed.parse::<i64>() {
            return Value::Number(n.into());
        }
        if let Ok(n) = signed.parse::<u64>() {
            return Value::Number(n.into());
        }
    }
    if is_core_float(unsigned)
        && let Some(n) = s.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    Value::String(s.to_owned())
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, sign already removed. `.inf` and `.nan`
/// are left out on purpose: JSON cannot carry them, so they stay strings.
fn is_core_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let int_digits = digits(&mut i);
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = digits(&mut i);
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn locate_finds_fences_at_byte_zero() {
        let text = "---\ntitle: A\n---\nbody";
        let span = locate(text).unwrap();
        assert_eq!(&text[span.yaml.clone()], "title: A\n");
        assert_eq!(&text[span.body_start..], "body");
    }

    #[test]
    fn locate_accepts_crlf_empty_and_eof_fence() {
        let text = "---\r\na: 1\r\n---\r\nbody";
        let span = locate(text).unwrap();
        assert_eq!(&text[span.yaml.clone()], "a: 1\r\n");
        assert_eq!(&text[span.body_start..], "body");

        let span = locate("---\n---\n- a").unwrap();
        assert_eq!(span.yaml, 4..4);
        assert_eq!(span.body_start, 8);

        let text = "---\na: 1\n---";
        let span = locate(text).unwrap();
        assert_eq!(span.body_start, text.len());
    }

    #[test]
    fn locate_rejects_unclosed_or_not_at_start() {
        assert_eq!(locate("---\na: 1\n"), None);
        assert_eq!(locate("\n---\na: 1\n---\n"), None);
        assert_eq!(locate("--- \na: 1\n---\n"), None);
        assert_eq!(locate("----\na\n----\n"), None);
    }

    #[test]
    fn scalars_resolve_per_core_schema() {
        let v = parse_yaml(
            "n: ~\nb: true\nB: False\ni: -42\nh: 0x1F\no: 0o17\nf: 1.5e3\ns: hello\nq: 'true'\nd: 2024-01-05\n\
             inf: .inf\nbig: 123456789012345678901234567890\nstr: !!str 12\nz: 007\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"n": null, "b": true, "B": false, "i": -42, "h": 31, "o": 15, "f": 1500.0, "s": "hello",
                   "q": "true", "d": "2024-01-05", "inf": ".inf", "big": 1.2345678901234568e29, "str": "12", "z": 7})
        );
    }

    #[test]
    fn nested_collections_and_anchors() {
        let v = parse_yaml("base: &b {x: 1}\nuse: *b\nlist:\n  - a\n  - [b, c]\nempty:\n").unwrap();
        assert_eq!(
            v,
            json!({"base": {"x": 1}, "use": {"x": 1}, "list": ["a", ["b", "c"]], "empty": null})
        );
    }

    #[test]
    fn keys_stay_strings() {
        let v = parse_yaml("1: one\ntrue: yes\n").unwrap();
        assert_eq!(v, json!({"1": "one", "true": "yes"}));
        assert_eq!(parse_yaml("[a]: 1\n"), Err(FrontmatterError::ComplexKey));
    }

    #[test]
    fn top_level_must_be_a_mapping() {
        assert_eq!(parse_yaml("").unwrap(), json!({}));
        assert_eq!(parse_yaml("# only a comment\n").unwrap(), json!({}));
        assert_eq!(parse_yaml("- a\n"), Err(FrontmatterError::NotAMapping));
        assert_eq!(parse_yaml("just text"), Err(FrontmatterError::NotAMapping));
        assert_eq!(
            parse_yaml("a: 1\n---\nb: 2\n"),
            Err(FrontmatterError::MultipleDocuments)
        );
    }

    #[test]
    fn syntax_errors_are_reported() {
        assert!(matches!(
            parse_yaml("a: [1, 2\n"),
            Err(FrontmatterError::Syntax { .. })
        ));
        assert!(matches!(
            parse_yaml("a: *nope\n"),
            Err(FrontmatterError::UnknownAlias | FrontmatterError::Syntax { .. })
        ));
    }

    #[test]
    fn alias_bomb_is_refused() {
        // The "billion laughs": each level multiplies by nine.
        let mut yaml = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for pair in names.windows(2) {
            let (prev, next) = (pair[0], pair[1]);
            yaml.push_str(&format!("{next}: &{next} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
        }
        assert_eq!(
            parse_yaml(&yaml),
            Err(FrontmatterError::TooManyNodes { max: MAX_NODES })
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let flow = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(
            parse_yaml(&flow),
            Err(FrontmatterError::TooDeep { .. } | FrontmatterError::Syntax { .. })
        ));
        let ok = format!(
            "a: {}{}\n",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(parse_yaml(&ok).is_ok());
        let too_deep = format!("a: {}{}\n", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(
            parse_yaml(&too_deep),
            Err(FrontmatterError::TooDeep { max: MAX_DEPTH })
        );

        let mut block = String::new();
        for i in 0..200 {
            block.push_str(&" ".repeat(i));
            block.push_str("k:\n");
        }
        assert_eq!(
            parse_yaml(&block),
            Err(FrontmatterError::TooDeep { max: MAX_DEPTH })
        );
    }

    #[test]
    fn deep_nesting_through_aliases_is_refused() {
        let mut yaml = String::from("l0: &l0 [x]\n");
        for i in 1..100 {
            yaml.push_str(&format!("l{i}: &l{i} [*l{}]\n", i - 1));
        }
        assert_eq!(
            parse_yaml(&yaml),
            Err(FrontmatterError::TooDeep { max: MAX_DEPTH })
        );
    }

    #[test]
    fn huge_documents_are_refused() {
        let yaml = format!("a: \"{}\"\n", "x".repeat(MAX_YAML_BYTES));
        assert!(matches!(
            parse_yaml(&yaml),
            Err(FrontmatterError::TooLarge { .. })
        ));
        let many = (0..MAX_NODES / 2 + 1)
            .map(|i| format!("k{i}: {i}\n"))
            .collect::<String>();
        assert!(many.len() < MAX_YAML_BYTES);
        assert_eq!(
            parse_yaml(&many),
            Err(FrontmatterError::TooManyNodes { max: MAX_NODES })
        );
    }

    /// The text `key_span` finds for `name` in `yaml`: (key, value).
    #[track_caller]
    fn spans<'a>(yaml: &'a str, name: &str) -> Option<(&'a str, &'a str)> {
        let s = key_span(yaml, name).unwrap()?;
        Some((&yaml[s.key], &yaml[s.value]))
    }

    #[test]
    fn key_spans_are_bytes_and_stop_before_comments() {
        // Multi-byte characters before and in the value: offsets are bytes, not characters.
        let yaml = "title: Ünïcödé # ä\ntags: [é, \"ß\"] # c\nx: 1\n";
        assert_eq!(spans(yaml, "tags"), Some(("tags", "[é, \"ß\"]")));
        assert_eq!(spans(yaml, "title"), Some(("title", "Ünïcödé")));
        // A quoted scalar ends at its closing quote, not after the blanks and comment behind it
        // (the parser's own span runs on through them).
        assert_eq!(
            spans("tags: 'a ''b''' # c\n", "tags"),
            Some(("tags", "'a ''b'''"))
        );
        assert_eq!(
            spans("\"tags\" : \"x \\\" #y\" # c\n", "tags"),
            Some(("\"tags\"", "\"x \\\" #y\""))
        );
        // A block list runs from its first dash to its last item's closing quote.
        let yaml = "é: 1\ntags:\n  - \"ä\" # c\n  - 'b #c'   # d\nx: ä\n";
        assert_eq!(
            spans(yaml, "tags"),
            Some(("tags", "- \"ä\" # c\n  - 'b #c'"))
        );
        // No value: empty, where the key ends.
        let s = key_span("tags:\nx: 1\n", "tags").unwrap().unwrap();
        assert_eq!((s.key, s.value), (0..4, 4..4));
        // Only top-level keys count.
        assert_eq!(spans("a:\n  tags: [x]\n", "tags"), None);
        assert_eq!(
            spans("a: {tags: 1}\ntags: 2\n", "tags"),
            Some(("tags", "2"))
        );
        assert_eq!(spans("tags: x\n", "tag"), None);
    }

    #[test]
    fn parse_combines_locate_and_yaml() {
        assert_eq!(parse("no frontmatter").unwrap(), None);
        assert_eq!(
            parse("---\ntags: [a, b]\n---\n").unwrap(),
            Some(json!({"tags": ["a", "b"]}))
        );
    }
}
