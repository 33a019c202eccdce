//! `VaultPath`: a vault-relative path to a markdown note that is known to be safe.
//!
//! Built only through [`VaultPath::lexical`] (names the server found itself, checked by their
//! text alone) or through the checks against the vault on disk, `VaultPath::parse` and
//! `VaultPath::from_abs` (in `vault.rs`, beside the vault they read), so a path that escapes the
//! vault cannot be represented. This file reads no disk.

use std::fmt;
use std::path::Path;

/// `MCP_PATH_MAX` of contract §11.
pub const PATH_MAX_CHARS: usize = 4096;

/// The longest file or folder name, in bytes, that the common file systems take (ext4, btrfs,
/// xfs, APFS in ASCII): a longer segment in a caller's path names no note that can exist.
pub const SEGMENT_MAX_BYTES: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path is longer than {PATH_MAX_CHARS} characters")]
    TooLong,
    #[error("path contains a NUL character")]
    Nul,
    #[error("path contains a backslash; use '/' separators")]
    Backslash,
    #[error("path must be relative to the vault, not absolute")]
    Absolute,
    #[error("path must not contain '..' or '.' segments or empty segments")]
    Traversal,
    #[error("path must not point into a dot-folder or at a dot-file (such as .pkm/ or .git/)")]
    Hidden,
    #[error("path must name a markdown note ending in .md")]
    NotMarkdown,
    #[error("path leads outside the vault through a symbolic link")]
    Escapes,
    #[error("path has a file or folder name longer than {SEGMENT_MAX_BYTES} bytes")]
    NameTooLong,
    #[error("path has a name Windows cannot hold: {0}")]
    NotOnWindows(&'static str),
}

/// Why Windows cannot hold a file or folder named `seg`, if it cannot: one of `<>:"|?*`, a
/// control character, a trailing dot or space, or a device name (`CON`, `PRN`, `AUX`, `NUL`,
/// `COM1`-`COM9`, `LPT1`-`LPT9`, with any extension). Checked by [`VaultPath::parse`] on Windows
/// only: elsewhere such names are valid, and a vault may hold them.
pub fn windows_name_problem(seg: &str) -> Option<&'static str> {
    if seg
        .chars()
        .any(|c| matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*'))
    {
        return Some(r#"one of < > : " | ? *"#);
    }
    if seg.chars().any(char::is_control) {
        return Some("a control character");
    }
    if seg.ends_with('.') || seg.ends_with(' ') {
        return Some("a name ending in a dot or a space");
    }
    let stem = seg.split('.').next().unwrap_or(seg).trim_end_matches(' ');
    let device = match stem.len() {
        3 => ["CON", "PRN", "AUX", "NUL"]
            .iter()
            .any(|d| stem.eq_ignore_ascii_case(d)),
        4 => {
            let (head, digit) = stem.split_at(3);
            (head.eq_ignore_ascii_case("COM") || head.eq_ignore_ascii_case("LPT"))
                && matches!(digit.as_bytes().first(), Some(b'1'..=b'9'))
        }
        _ => false,
    };
    device.then_some("a device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9)")
}

/// A safe, vault-relative, `/`-separated path to a `.md` note.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VaultPath(String);

impl VaultPath {
    /// Checks `input` by its text alone: relative, `/`-separated, no `..`, no dot-segments, no
    /// NUL or backslash, at most 4096 characters, ending in `.md`.
    pub fn lexical(input: &str) -> Result<VaultPath, PathError> {
        if input.is_empty() {
            return Err(PathError::Empty);
        }
        if input.chars().count() > PATH_MAX_CHARS {
            return Err(PathError::TooLong);
        }
        if input.contains('\0') {
            return Err(PathError::Nul);
        }
        if input.contains('\\') {
            return Err(PathError::Backslash);
        }
        let bytes = input.as_bytes();
        let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
        if input.starts_with('/') || drive {
            return Err(PathError::Absolute);
        }
        for seg in input.split('/') {
            if seg.is_empty() || seg == "." || seg == ".." {
                return Err(PathError::Traversal);
            }
            if seg.starts_with('.') {
                return Err(PathError::Hidden);
            }
        }
        let is_md = Path::new(input)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        let stem_ok = input.rsplit('/').next().is_some_and(|name| name.len() > 3);
        if !is_md || !stem_ok {
            return Err(PathError::NotMarkdown);
        }
        Ok(VaultPath(input.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path without its `.md` extension, as the contract's `slug`.
    pub fn slug(&self) -> &str {
        slug_of(&self.0)
    }

    /// The file name without extension.
    pub fn stem(&self) -> &str {
        let slug = self.slug();
        slug.rsplit('/').next().unwrap_or(slug)
    }

    /// The folder part (`""` at the root).
    pub fn parent(&self) -> &str {
        self.0.rsplit_once('/').map(|(dir, _)| dir).unwrap_or("")
    }
}

/// A note path without its `.md` extension (any case); other strings unchanged.
pub fn slug_of(path: &str) -> &str {
    match path
        .len()
        .checked_sub(3)
        .and_then(|i| path.get(i..).map(|ext| (i, ext)))
    {
        Some((i, ext)) if ext.eq_ignore_ascii_case(".md") => path.get(..i).unwrap_or(path),
        _ => path,
    }
}

impl fmt::Display for VaultPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: Result<&str, PathError>) {
        let got = VaultPath::lexical(input);
        assert_eq!(
            got.as_ref().map(|p| p.as_str()).map_err(Clone::clone),
            expect,
            "{input:?}"
        );
    }

    #[test]
    fn lexical_rules() {
        use PathError::*;
        check("a.md", Ok("a.md"));
        check("projects/example.md", Ok("projects/example.md"));
        check("Über/naïve café.MD", Ok("Über/naïve café.MD"));
        check("", Err(Empty));
        check("../x.md", Err(Traversal));
        check("a/../b.md", Err(Traversal));
        check("a//b.md", Err(Traversal));
        check("./a.md", Err(Traversal));
        check("/etc/passwd.md", Err(Absolute));
        check("C:/x.md", Err(Absolute));
        check("a\\b.md", Err(Backslash));
        check("a\0.md", Err(Nul));
        check(".pkm/blocks.md", Err(Hidden));
        check(".git/x.md", Err(Hidden));
        check("notes/.hidden.md", Err(Hidden));
        check("notes/x.txt", Err(NotMarkdown));
        check("notes/.md", Err(Hidden));
        check(".md", Err(Hidden));
        check("x/", Err(Traversal));
        check(&"a".repeat(4100), Err(TooLong));
    }

    #[test]
    fn slug_stem_parent() {
        let p = VaultPath::lexical("projects/sub/example.md").unwrap();
        assert_eq!(p.slug(), "projects/sub/example");
        assert_eq!(p.stem(), "example");
        assert_eq!(p.parent(), "projects/sub");
        assert_eq!(VaultPath::lexical("top.md").unwrap().parent(), "");
    }

    #[test]
    fn names_windows_cannot_hold() {
        for bad in [
            "a:b.md",
            "what?.md",
            "x*.md",
            "a<b>.md",
            "say \"hi\".md",
            "a|b.md",
            "tab\there.md",
            "trailing.",
            "trailing ",
            "CON.md",
            "con.md",
            "Nul",
            "aux.txt.md",
            "COM1.md",
            "lpt9.md",
            "CON .md",
        ] {
            assert!(windows_name_problem(bad).is_some(), "{bad:?}");
        }
        for good in [
            "note.md",
            "CONSOLE.md",
            "COM0.md",
            "COM10.md",
            "icon.md",
            "a.b.md",
            "Über café.md",
            "my notes",
        ] {
            assert_eq!(windows_name_problem(good), None, "{good:?}");
        }
    }
}
