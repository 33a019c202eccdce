//! Why a vault file could not be reached or read: a path that leads outside the vault (or into
//! `.pkm/`) through a symbolic link, a file that is not a regular file, or an IO error. The file
//! calls that refuse ([`crate::beneath::Root`]) return these; the scan, the write path and the
//! page reads word them. Only regular files are notes: a FIFO, socket or device named like a note
//! is never opened blocking (a FIFO without a writer would hold the reader forever): its type is
//! checked before the open, the open is non-blocking, and the opened file is checked again
//! (`Root::read_regular`), so a file swapped in between is refused too.

use std::io;

/// The error payload of a path that leads outside the vault or into `.pkm/`.
#[derive(Debug)]
pub(crate) struct Escape;

impl std::fmt::Display for Escape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the path leads outside the vault through a symbolic link")
    }
}

impl std::error::Error for Escape {}

pub(crate) fn escape() -> io::Error {
    io::Error::other(Escape)
}

/// Whether `e` is the refusal of a path leading outside the vault.
pub(crate) fn is_escape(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Escape>())
}

/// Why a note's file could not be read.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The path names a FIFO, socket, device or folder, not a regular file.
    NotRegular,
    /// The path leads outside the vault (or into `.pkm/`) through a symbolic link.
    Escapes,
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadFailure {
    fn from(e: std::io::Error) -> Self {
        if is_escape(&e) {
            ReadFailure::Escapes
        } else {
            ReadFailure::Io(e)
        }
    }
}

impl ReadFailure {
    /// The reason shown in a scan report or a log line.
    pub(crate) fn reason(&self) -> String {
        match self {
            ReadFailure::NotRegular => NOT_REGULAR.to_owned(),
            ReadFailure::Escapes => ESCAPES.to_owned(),
            ReadFailure::Io(e) => format!("unreadable: {}", e.kind()),
        }
    }
}

/// The reason a non-regular file is not a note.
pub(crate) const NOT_REGULAR: &str = "not a regular file";

/// The reason a path through a symlink leading out of the vault is not a note.
pub(crate) const ESCAPES: &str = "leads outside the vault through a symbolic link";
