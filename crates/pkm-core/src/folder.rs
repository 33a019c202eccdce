//! Making a folder's entries durable, the one place that knows where an OS cannot.

/// Makes a folder's entries (a file made, a rename, a removal) durable by running `sync` (an
/// fsync of the folder, however the caller holds it). Where the OS cannot fsync a folder (Windows:
/// a folder opened as a file cannot be flushed, and NTFS journals its entries itself) that is no
/// failure and `sync` is not run; anywhere else a failed fsync is one.
pub fn sync_folder(sync: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
    if cfg!(windows) {
        return Ok(());
    }
    sync()
}
