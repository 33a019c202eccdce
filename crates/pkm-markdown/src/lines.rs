//! Line-level recognisers shared by the block parser and the tag editor: indentation, list
//! bullets, ATX and setext headings, fences, thematic breaks and `key:: value` properties.

/// Columns a tab advances to (the next multiple of this).
const TAB: usize = 4;

/// One line of the text: `start..end` excludes the line break (and a `\r` before it), `next` is
/// the first byte of the following line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    pub start: usize,
    pub end: usize,
    pub next: usize,
}

/// The lines of `text[from..]`, with absolute offsets. As in CommonMark, a line ends at `\n`,
/// `\r\n` or a lone `\r`, so no line's text holds a line-ending character.
pub(crate) fn lines(text: &str, from: usize) -> impl Iterator<Item = Line> + '_ {
    let mut pos = from;
    std::iter::from_fn(move || {
        let tail = text.get(pos..).filter(|t| !t.is_empty())?;
        let (end, next) = match tail.bytes().position(|b| b == b'\n' || b == b'\r') {
            Some(i) => {
                let crlf = tail.as_bytes().get(i..i + 2) == Some(b"\r\n".as_slice());
                (pos + i, pos + i + if crlf { 2 } else { 1 })
            }
            None => (text.len(), text.len()),
        };
        let line = Line {
            start: pos,
            end,
            next,
        };
        pos = next;
        Some(line)
    })
}

/// Leading whitespace of `s`: (columns, bytes).
pub(crate) fn indent(s: &str) -> (usize, usize) {
    let mut cols = 0;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b' ' => cols += 1,
            b'\t' => cols += TAB - cols % TAB,
            _ => return (cols, i),
        }
    }
    (cols, s.len())
}

/// `s` without up to `n` columns of leading whitespace (a tab that straddles `n` is removed).
pub(crate) fn strip_cols(s: &str, n: usize) -> &str {
    let mut cols = 0;
    for (i, b) in s.bytes().enumerate() {
        if cols >= n {
            return s.get(i..).unwrap_or_default();
        }
        match b {
            b' ' => cols += 1,
            b'\t' => cols += TAB - cols % TAB,
            _ => return s.get(i..).unwrap_or_default(),
        }
    }
    ""
}

pub(crate) fn is_blank(s: &str) -> bool {
    s.bytes().all(|b| b == b' ' || b == b'\t')
}

/// A list item's bullet at the start of `s` (indentation already removed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bullet {
    /// Columns from the bullet's first column to its content's first column.
    pub content_offset_cols: usize,
    /// Bytes from the bullet's first byte to its content's first byte.
    pub content_offset_bytes: usize,
    /// The item has no text on its first line.
    pub empty: bool,
    /// An ordered bullet whose number is not 1 (it cannot interrupt a paragraph).
    pub ordered_not_one: bool,
}

/// Recognises `-`, `*`, `+` and `1.` / `1)` bullets followed by whitespace or the line's end.
/// `col` is the bullet's column, so tabs after it expand correctly.
pub(crate) fn bullet(s: &str, col: usize) -> Option<Bullet> {
    let b = s.as_bytes();
    let (width, ordered_not_one) = match b.first()? {
        b'-' | b'*' | b'+' => (1, false),
        b'0'..=b'9' => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 9 || !matches!(b.get(digits), Some(b'.' | b')')) {
                return None;
            }
            let number = s.get(..digits).unwrap_or_default();
            (digits + 1, number.trim_start_matches('0') != "1")
        }
        _ => return None,
    };
    let rest = s.get(width..)?;
    if rest.is_empty() {
        return Some(Bullet {
            content_offset_cols: width + 1,
            content_offset_bytes: width,
            empty: true,
            ordered_not_one,
        });
    }
    if !matches!(rest.as_bytes().first(), Some(b' ' | b'\t')) {
        return None;
    }
    let (ws_cols_abs, ws_bytes) = {
        // Columns of the whitespace after the marker, measured from the marker's column.
        let start = col + width;
        let mut c = start;
        let mut n = 0;
        for byte in rest.bytes() {
            match byte {
                b' ' => c += 1,
                b'\t' => c += TAB - c % TAB,
                _ => break,
            }
            n += 1;
        }
        (c - start, n)
    };
    let empty = ws_bytes == rest.len();
    if empty {
        return Some(Bullet {
            content_offset_cols: width + 1,
            content_offset_bytes: s.len(),
            empty,
            ordered_not_one,
        });
    }
    // Five or more spaces after the bullet start indented code inside the item; the content
    // column is then one past the bullet (CommonMark 5.2). The text itself is kept trimmed.
    let cols = if ws_cols_abs > 4 { 1 } else { ws_cols_abs };
    Some(Bullet {
        content_offset_cols: width + cols,
        content_offset_bytes: width + ws_bytes,
        empty,
        ordered_not_one,
    })
}

/// Logseq indents an outline's blocks with tabs (or spaces), also right under a heading or a
/// paragraph that is not itself a bullet (`## Usage\n\t- item`). So a bullet indented four or
/// more columns that directly follows a non-blank line opens an outline: a list item, not the
/// indented code CommonMark would read after a heading. After a blank line (or at the start of
/// the text) such a line stays indented code. Returns the bullet's column and the bullet.
pub(crate) fn opens_outline(text: &str, line: Line) -> Option<(usize, Bullet)> {
    let s = text.get(line.start..line.end)?;
    let (cols, bytes) = indent(s);
    let after = s.get(bytes..)?;
    if cols < 4 || is_thematic_break(after) {
        return None;
    }
    let b = bullet(after, cols)?;
    // The previous line is non-blank: some byte other than a space or tab stands between the
    // line break before this line and the one before that.
    let before = text.get(..line.start)?;
    let before = before
        .strip_suffix("\r\n")
        .or_else(|| before.strip_suffix(['\n', '\r']))?;
    let non_blank = before
        .bytes()
        .rev()
        .take_while(|&c| c != b'\n' && c != b'\r')
        .any(|c| c != b' ' && c != b'\t');
    // The closing fence of frontmatter is not part of the body: the body starts afresh.
    if !non_blank
        || (before.trim_end_matches([' ', '\t']).ends_with("---")
            && crate::frontmatter::locate(text).is_some_and(|f| f.body_start == line.start))
    {
        return None;
    }
    Some((cols, b))
}

/// `***`, `---`, `___` (three or more, spaces between allowed), indentation already removed.
pub(crate) fn is_thematic_break(s: &str) -> bool {
    let mut ch = None;
    let mut count = 0;
    for b in s.bytes() {
        match b {
            b' ' | b'\t' => {}
            b'*' | b'-' | b'_' => {
                if ch.is_some_and(|c| c != b) {
                    return false;
                }
                ch = Some(b);
                count += 1;
            }
            _ => return false,
        }
    }
    count >= 3
}

/// An ATX heading (`## text ##`), indentation already removed: its level and trimmed text.
pub(crate) fn atx_heading(s: &str) -> Option<(u8, &str)> {
    let hashes = s.bytes().take_while(|&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = s.get(hashes..)?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let mut text = rest.trim_matches([' ', '\t']);
    // A closing sequence of '#'s counts only when a space precedes it (or it is all there is).
    let without = text.trim_end_matches('#');
    if without.is_empty() {
        text = "";
    } else if without.len() < text.len() && without.ends_with([' ', '\t']) {
        text = without.trim_end_matches([' ', '\t']);
    }
    Some((u8::try_from(hashes).unwrap_or(6), text))
}

/// A setext underline (`===` or `---`), indentation already removed: the heading level.
pub(crate) fn setext_underline(s: &str) -> Option<u8> {
    let t = s.trim_end_matches([' ', '\t']);
    if !t.is_empty() && t.bytes().all(|b| b == b'=') {
        Some(1)
    } else if !t.is_empty() && t.bytes().all(|b| b == b'-') {
        Some(2)
    } else {
        None
    }
}

/// An open code fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fence {
    pub ch: u8,
    pub len: usize,
}

/// An opening fence (``` or ~~~, three or more), up to three spaces of indentation allowed.
pub(crate) fn fence_open(s: &str) -> Option<Fence> {
    let (cols, bytes) = indent(s);
    if cols > 3 {
        return None;
    }
    let s = s.get(bytes..)?;
    let ch = *s.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = s.bytes().take_while(|&b| b == ch).count();
    if len < 3 {
        return None;
    }
    // A backtick fence's info string cannot hold a backtick (that would be a code span).
    if ch == b'`' && s.get(len..).is_some_and(|info| info.contains('`')) {
        return None;
    }
    Some(Fence { ch, len })
}

/// Whether `s` closes `fence`.
pub(crate) fn fence_closes(s: &str, fence: Fence) -> bool {
    let (cols, bytes) = indent(s);
    if cols > 3 {
        return false;
    }
    let s = s.get(bytes..).unwrap_or_default();
    let len = s.bytes().take_while(|&b| b == fence.ch).count();
    len >= fence.len && is_blank(s.get(len..).unwrap_or_default())
}

/// A `key:: value` property line: the key (letters, digits, `_`, `-`) starts the line.
pub(crate) fn property(s: &str) -> Option<(&str, &str)> {
    let (key, rest) = s.split_once("::")?;
    if key.is_empty()
        || key.starts_with('-')
        || !key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, rest.trim_matches([' ', '\t'])))
}

/// Whether `s` is a UUID in its 8-4-4-4-12 hex form.
pub(crate) fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets() {
        assert!(
            bullet("- a", 0)
                .is_some_and(|b| b.content_offset_cols == 2 && b.content_offset_bytes == 2)
        );
        assert!(bullet("-", 0).is_some_and(|b| b.empty));
        assert!(
            bullet("12. a", 0).is_some_and(|b| b.content_offset_cols == 4 && b.ordered_not_one)
        );
        assert!(bullet("1) a", 0).is_some_and(|b| !b.ordered_not_one));
        assert!(bullet("-a", 0).is_none());
        assert!(bullet("**bold**", 0).is_none());
        assert!(bullet("2024-01-01", 0).is_none());
        assert!(bullet("-\tx", 0).is_some_and(|b| b.content_offset_cols == 4));
    }

    #[test]
    fn headings_and_breaks() {
        assert_eq!(atx_heading("## Title ##"), Some((2, "Title")));
        assert_eq!(atx_heading("# C#"), Some((1, "C#")));
        assert_eq!(atx_heading("#"), Some((1, "")));
        assert_eq!(atx_heading("#tag"), None);
        assert_eq!(atx_heading("####### seven"), None);
        assert!(is_thematic_break("- - -"));
        assert!(is_thematic_break("***"));
        assert!(!is_thematic_break("--"));
        assert_eq!(setext_underline("==="), Some(1));
        assert_eq!(setext_underline("-- "), Some(2));
    }

    #[test]
    fn fences_and_properties() {
        let f = fence_open("````rust").unwrap();
        assert!(!fence_closes("```", f));
        assert!(fence_closes("`````  ", f));
        assert!(fence_open("``not`a fence").is_none());
        assert_eq!(property("id:: 1234"), Some(("id", "1234")));
        assert_eq!(property("empty::"), Some(("empty", "")));
        assert_eq!(property("a b:: c"), None);
        assert_eq!(property("http://x"), None);
        assert_eq!(property("C::D"), None);
        assert!(is_uuid("9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22"));
        assert!(!is_uuid("9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c2"));
    }

    #[test]
    fn indentation() {
        assert_eq!(indent("\t  x"), (6, 3));
        assert_eq!(strip_cols("\t  x", 4), "  x");
        assert_eq!(strip_cols("  x", 4), "x");
        let v: Vec<_> = lines("a\r\nb\n\nc", 0)
            .map(|l| (l.start, l.end, l.next))
            .collect();
        assert_eq!(v, vec![(0, 1, 3), (3, 4, 5), (5, 5, 6), (6, 7, 7)]);
    }
}
