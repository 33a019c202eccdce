//! Reading a note's file: only regular files are notes. A FIFO, socket or device named like a
//! note is never opened blocking (a FIFO without a writer would hold the reader forever): its type
//! is checked before the open, the open is non-blocking, and the opened file is checked again, so
//! a file swapped in between is refused too. The file is opened beneath the vault's handle
//! ([`crate::beneath::Root::read_regular`]).

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
        if crate::beneath::is_escape(&e) {
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
