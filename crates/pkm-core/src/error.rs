//! Shared error kinds. Every crate keeps its own error enum; each maps onto one `ErrorKind`, and
//! only `pkm-mcp` turns a kind into a JSON-RPC code.

use std::fmt;

/// The contract's §8.1 vocabulary, minus the protocol-level kinds that only `pkm-mcp` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Bad input: a schema violation, a path outside the vault, an unparsable timestamp.
    InvalidArgs,
    /// The note, page or tag does not exist.
    NotFound,
    /// An `expected_modified` precondition failed; nothing was changed.
    Conflict,
    /// The index is being rebuilt exclusively; try again shortly.
    VaultLocked,
    /// The store or the index failed (SQLite, Tantivy, the filesystem).
    External,
    /// A bug or an unexpected state.
    Internal,
}

impl ErrorKind {
    /// The name the contract uses in `data.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgs => "InvalidArgs",
            ErrorKind::NotFound => "NotFound",
            ErrorKind::Conflict => "Conflict",
            ErrorKind::VaultLocked => "VaultLocked",
            ErrorKind::External => "External",
            ErrorKind::Internal => "Internal",
        }
    }
}

/// An operation a hint may send the caller to. The layers below the server do not know how a
/// caller invokes it (the MCP server has a tool for each), so a hint names it by its placeholder,
/// `{save_page}` say, and the front end words it ([`Operation::placeholder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Read a note, with its `modified_at`.
    OpenPage,
    /// Create or overwrite a note.
    SavePage,
    /// List the notes, paged.
    ListPages,
    /// Rebuild the store and the index from the files.
    Rebuild,
    /// The index's freshness.
    IndexStatus,
}

impl Operation {
    pub const ALL: [Operation; 5] = [
        Operation::OpenPage,
        Operation::SavePage,
        Operation::ListPages,
        Operation::Rebuild,
        Operation::IndexStatus,
    ];

    /// How a hint names the operation.
    pub fn placeholder(self) -> &'static str {
        match self {
            Operation::OpenPage => "{open_page}",
            Operation::SavePage => "{save_page}",
            Operation::ListPages => "{list_pages}",
            Operation::Rebuild => "{rebuild}",
            Operation::IndexStatus => "{index_status}",
        }
    }
}

/// An error as the command surface reports it: a kind, a one-line human message that never holds
/// an absolute path, and what the caller can do about it (a hint, whose operations are written as
/// [`Operation`] placeholders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KbError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    /// Vault-relative path of the note concerned, when there is one.
    pub note_path: Option<String>,
    /// For transient errors: when a retry may succeed.
    pub retry_after_seconds: Option<u64>,
}

pub type KbResult<T> = Result<T, KbError>;

impl KbError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        KbError {
            kind,
            message: message.into(),
            hint: None,
            note_path: None,
            retry_after_seconds: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgs, message)
    }
    pub fn not_found(note_path: &str) -> Self {
        Self::new(ErrorKind::NotFound, format!("Note not found: {note_path}"))
            .with_note(note_path)
            .with_hint(
                "Create it with {save_page}, or check the path ({list_pages} lists the notes).",
            )
    }
    /// A failure of the store, index or filesystem. The cause is logged by the caller; the message
    /// stays generic so that no internals reach a client.
    pub fn external(what: &str) -> Self {
        Self::new(ErrorKind::External, format!("{what} failed"))
            .with_hint("Retry; if it persists, check the server log.")
    }
    pub fn internal(what: &str) -> Self {
        Self::new(ErrorKind::Internal, format!("internal error: {what}"))
            .with_hint("Check the server log.")
    }
    pub fn locked(retry_after_seconds: u64) -> Self {
        let mut e = Self::new(
            ErrorKind::VaultLocked,
            "The index is being rebuilt; the vault is locked for writing",
        )
        .with_hint("Retry after the indicated number of seconds.");
        e.retry_after_seconds = Some(retry_after_seconds.max(1));
        e
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn with_note(mut self, note_path: impl Into<String>) -> Self {
        self.note_path = Some(note_path.into());
        self
    }
}

impl fmt::Display for KbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for KbError {}
