//! Reading a note's file: only regular files are notes. A FIFO, socket or device named like a
//! note is never opened blocking (a FIFO without a writer would hold the reader forever): its type
//! is checked before the open, the open is non-blocking, and the opened file is checked again, so
//! a file swapped in between is refused too.

use std::io::Read;
use std::path::Path;

/// Why a note's file could not be read.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The path names a FIFO, socket, device or folder, not a regular file.
    NotRegular,
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadFailure {
    fn from(e: std::io::Error) -> Self {
        ReadFailure::Io(e)
    }
}

impl ReadFailure {
    /// The reason shown in a scan report or a log line.
    pub(crate) fn reason(&self) -> String {
        match self {
            ReadFailure::NotRegular => NOT_REGULAR.to_owned(),
            ReadFailure::Io(e) => format!("unreadable: {}", e.kind()),
        }
    }
}

/// The reason a non-regular file is not a note.
pub(crate) const NOT_REGULAR: &str = "not a regular file";

/// What a non-regular file is, for a scan report (`None` for regular files, folders, symlinks).
pub(crate) fn special_kind(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() || ft.is_dir() || ft.is_symlink() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return Some("a FIFO");
        }
        if ft.is_socket() {
            return Some("a socket");
        }
        if ft.is_block_device() || ft.is_char_device() {
            return Some("a device");
        }
    }
    Some("a special file")
}

/// Reads the regular file at `abs` (following symlinks, as a plain read does), with the metadata
/// of the file actually read.
pub(crate) fn read_regular(abs: &Path) -> Result<(Vec<u8>, std::fs::Metadata), ReadFailure> {
    if !std::fs::metadata(abs)?.is_file() {
        return Err(ReadFailure::NotRegular);
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let mut file = options.open(abs)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadFailure::NotRegular);
    }
    // O_NONBLOCK does not change reads of a regular file.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok((bytes, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        std::fs::write(&p, "hi").unwrap();
        let (bytes, meta) = read_regular(&p).unwrap();
        assert_eq!(bytes, b"hi");
        assert!(meta.is_file());
    }

    #[test]
    fn refuses_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_regular(dir.path()),
            Err(ReadFailure::NotRegular)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.md");
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(read_regular(&p), Err(ReadFailure::NotRegular)));
        let ft = std::fs::symlink_metadata(&p).unwrap().file_type();
        assert_eq!(special_kind(ft), Some("a FIFO"));
    }
}
