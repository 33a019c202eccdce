//! The crate's one error enum. `FrontmatterError` and `TagEditError` name it where the API reads
//! better with a specific name; they are the same type.

use pkm_core::{ErrorKind, KbError};

/// Why frontmatter was refused or a tag or property edit could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkdownError {
    /// The YAML text is longer than the parser accepts.
    #[error("frontmatter is {len} bytes; at most {max} are accepted")]
    TooLarge { len: usize, max: usize },
    /// Collections (including alias expansions) nest deeper than the limit.
    #[error("frontmatter nests deeper than {max} levels")]
    TooDeep { max: usize },
    /// The document, with aliases expanded, has more nodes than the limit (alias bombs end here).
    #[error("frontmatter has more than {max} nodes (aliases expanded)")]
    TooManyNodes { max: usize },
    /// `*name` refers to no anchor defined before it.
    #[error("frontmatter uses an undefined alias")]
    UnknownAlias,
    /// A mapping key that is a sequence or a mapping; JSON objects need string keys.
    #[error("frontmatter has a mapping key that is not a scalar")]
    ComplexKey,
    /// A mapping names the same key twice (YAML requires unique keys; which one wins would be a
    /// guess, and a tag edit would change only one of them).
    #[error("frontmatter repeats the key `{0}`")]
    DuplicateKey(String),
    /// The top level is a scalar or a sequence, not a mapping.
    #[error("frontmatter is not a mapping of keys to values")]
    NotAMapping,
    /// More than one YAML document between the fences.
    #[error("frontmatter holds more than one YAML document")]
    MultipleDocuments,
    /// The YAML scanner or parser rejected the text.
    #[error("invalid YAML in frontmatter at line {line}, column {col}: {message}")]
    Syntax {
        message: String,
        line: usize,
        col: usize,
    },
    /// The tag is empty or holds characters a tag cannot hold (whitespace, control characters).
    #[error("invalid tag {0:?}")]
    InvalidTag(String),
    /// The frontmatter `tags` value has a shape this crate does not edit in place.
    #[error("cannot edit frontmatter tags: {0}")]
    UnsupportedTags(String),
    /// A property key or value the property editor cannot write: a key or value
    /// with control characters, a nested value, a key named twice, a Logseq value on two lines.
    #[error("invalid property: {0}")]
    InvalidProperty(String),
    /// The note's properties are written in a form the property editor does not change in place.
    #[error("cannot edit the note's properties: {0}")]
    UnsupportedProperty(String),
    /// An edit located text at bytes the note does not hold there: a fault of the edit, which
    /// is refused rather than written.
    #[error("the edit lost its place in the note (bytes {start}..{end})")]
    LostPlace { start: usize, end: usize },
    /// No section of the note has the address; `headings` are the paths it has.
    #[error("no section {address:?} in this note; {}", listed(headings))]
    NoSection {
        address: String,
        headings: Vec<String>,
    },
    /// More than one section has the address.
    #[error("section {address:?} is ambiguous: it may be {}", choices.join(", "))]
    AmbiguousSection {
        address: String,
        choices: Vec<String>,
    },
    /// A `replace` found its text another number of times than the caller expected.
    #[error("found {found} occurrence(s) of {find:?}, expected {expected}; nothing was written")]
    FindCount {
        find: String,
        expected: usize,
        found: usize,
    },
    /// No block of the note has the id.
    #[error("no block {0:?} in this note")]
    NoBlock(String),
    /// Edit `n` (from 1) of an edit list was refused.
    #[error("edit {n}: {source}")]
    InEdit {
        n: usize,
        source: Box<MarkdownError>,
    },
}

/// The headings a note has, as an error lists them (the first 50).
fn listed(headings: &[String]) -> String {
    const SHOWN: usize = 50;
    if headings.is_empty() {
        return "it has no headings".to_owned();
    }
    let mut s = format!(
        "its headings: {}",
        headings
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    if headings.len() > SHOWN {
        s.push_str(&format!(" and {} more", headings.len() - SHOWN));
    }
    s
}

/// Errors of frontmatter parsing.
pub type FrontmatterError = MarkdownError;
/// Errors of tag edits.
pub type TagEditError = MarkdownError;

impl MarkdownError {
    /// Every error of this crate but [`MarkdownError::LostPlace`] and
    /// [`MarkdownError::NoBlock`] is about the input text, so `InvalidArgs`; a lost place is this
    /// crate's fault, `Internal`; a block the note does not hold is `NotFound`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            MarkdownError::LostPlace { .. } => ErrorKind::Internal,
            MarkdownError::NoBlock(_) => ErrorKind::NotFound,
            MarkdownError::InEdit { source, .. } => source.kind(),
            _ => ErrorKind::InvalidArgs,
        }
    }
}

impl From<MarkdownError> for KbError {
    fn from(e: MarkdownError) -> Self {
        KbError::new(e.kind(), e.to_string()).with_hint(e.hint())
    }
}

impl MarkdownError {
    /// What the caller can do about it.
    fn hint(&self) -> &'static str {
        match self {
            MarkdownError::InEdit { source, .. } => source.hint(),
            MarkdownError::NoSection { .. } | MarkdownError::AmbiguousSection { .. } => {
                "Address a section by its heading's text or by a path of headings from an outer one down (`Projects#Q3#Risks`), as the message lists them."
            }
            MarkdownError::FindCount { .. } => {
                "Pass `count` as the number of occurrences to replace them all, or make `find` longer so that it names one place."
            }
            MarkdownError::NoBlock(_) => {
                "Pass a block id {open_page} gives for this note now; an edit before this one may have changed the block."
            }
            MarkdownError::InvalidTag(_) => {
                "Tags are letters, digits and `_ - / .`, without spaces."
            }
            MarkdownError::LostPlace { .. } => {
                "This is a fault of the server, not of the note; edit the note with {save_page}."
            }
            MarkdownError::InvalidProperty(_) => {
                "Values are a string, a number, a boolean, a list of strings or null; Logseq keys are letters, digits, `_` and `-`."
            }
            MarkdownError::UnsupportedProperty(_) => {
                "Edit the note's properties with {save_page} instead."
            }
            MarkdownError::UnsupportedTags(_) => {
                "Write `tags` as a list (`tags: [a, b]`) and retry, or edit the note with {save_page}."
            }
            _ => "Fix the YAML between the `---` fences at the top of the note.",
        }
    }
}
