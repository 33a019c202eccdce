//! The directory the search index lives in: Tantivy's [`MmapDirectory`] for reading, locking and
//! deleting, but every file written without a sync (ADR-0024).
//!
//! Tantivy syncs each file it writes, the folder, and its commit point `meta.json`: nine syncs
//! for a commit of one note, which were a fifth of a single-note write's time here (and on macOS
//! each is a flush of the drive's cache). The index is derived from the notes, so it need not be
//! durable at each commit: it must only never be trusted when a machine crash has cut it. So:
//!
//! - before a `meta.json` that names files not yet synced is written, the mark
//!   [`UNSYNCED_MARK`] is created and synced: from then on the index may hold writes the disk
//!   does not;
//! - [`IndexDirectory::make_durable`] (a clean close, and the commit of a bulk load: a rebuild or
//!   a new vault's first scan) syncs the files of the last commit, then removes the mark;
//! - opening an index that carries the mark checks the checksum of every file of its last commit
//!   ([`crate::IndexEngine::open`]); a file that fails, or is missing, makes the index corrupt,
//!   and the vault rebuilds it. A commit lost whole (an older `meta.json` on disk) is found by
//!   the vault, which records each commit it relies on (the commit's stamp) in its store.
//!
//! A process that dies loses nothing the OS already holds; only a machine crash can leave a cut
//! file, and only in an index that carries the mark.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tantivy::Directory;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

/// Tantivy's commit point.
const META: &str = "meta.json";

/// The file whose presence says the index may hold writes that are not on the disk yet.
pub(crate) const UNSYNCED_MARK: &str = "unsynced";

/// Tantivy's memory-mapped directory at `root`, writing without syncs.
#[derive(Clone, Debug)]
pub(crate) struct IndexDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    /// Whether [`UNSYNCED_MARK`] is on disk; held while it is made or removed, and while
    /// `meta.json` is written, so that no commit point is written without the mark.
    marked: Arc<Mutex<bool>>,
}

impl IndexDirectory {
    pub(crate) fn open(root: &Path) -> tantivy::Result<IndexDirectory> {
        Ok(IndexDirectory {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
            marked: Arc::new(Mutex::new(root.join(UNSYNCED_MARK).exists())),
        })
    }

    /// Whether the index may hold writes that are not on the disk: the mark was there when this
    /// directory was opened, or a commit has been written since.
    pub(crate) fn is_marked(&self) -> bool {
        *self.marked.lock()
    }

    /// Syncs the files of the last commit (`files_of_last_commit`, read while no commit can be
    /// written; any gone since are skipped) and `meta.json`, then removes the mark: everything the
    /// index holds is on the disk.
    pub(crate) fn make_durable(
        &self,
        files_of_last_commit: impl FnOnce() -> io::Result<Vec<PathBuf>>,
    ) -> io::Result<()> {
        let mut marked = self.marked.lock();
        if !*marked {
            return Ok(());
        }
        let files = files_of_last_commit()?;
        for file in files.iter().map(PathBuf::as_path).chain([Path::new(META)]) {
            // Write access: Windows flushes a file only through a handle that may write it.
            match OpenOptions::new().write(true).open(self.root.join(file)) {
                Ok(f) => f.sync_data()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        sync_entries(&self.root)?;
        fs::remove_file(self.root.join(UNSYNCED_MARK))?;
        sync_entries(&self.root)?;
        *marked = false;
        Ok(())
    }
}

/// Makes the folder's entries (files made, renamed, removed) durable.
fn sync_entries(path: &Path) -> io::Result<()> {
    pkm_core::folder::sync_folder(|| File::open(path)?.sync_all())
}

/// Writes `data` to `path` by a rename over it, without a sync: a reader sees the old bytes or
/// the new ones, never part of either.
fn replace_unsynced(path: &Path, data: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other("an index file has no name"))?;
    let temp = path.with_file_name(format!(
        "{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = File::create(&temp).and_then(|mut f| f.write_all(data));
    match written.and_then(|()| fs::rename(&temp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            // Best effort: the temp file is only litter, and the error reported is the write's.
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// A new index file, written without a sync when Tantivy is done with it.
struct UnsyncedFile(File);

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()
    }
}

impl Directory for IndexDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        // As `MmapDirectory` does: a file is written once, never over another.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                } else {
                    OpenWriteError::wrap_io_error(e, path.to_path_buf())
                }
            })?;
        Ok(BufWriter::new(Box::new(UnsyncedFile(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if path != Path::new(META) {
            return replace_unsynced(&self.root.join(path), data);
        }
        let mut marked = self.marked.lock();
        if !*marked {
            let mark = self.root.join(UNSYNCED_MARK);
            File::create(&mark)?.sync_all()?;
            sync_entries(&self.root)?;
            *marked = true;
        }
        replace_unsynced(&self.root.join(path), data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        // Nothing is synced per commit; see the module's text.
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn files_are_replaced_whole_and_a_commit_point_is_never_written_without_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let d = IndexDirectory::open(dir.path()).unwrap();
        d.atomic_write(Path::new(".managed.json"), b"[\"a\"]")
            .unwrap();
        d.atomic_write(Path::new(".managed.json"), b"[\"a\",\"b\"]")
            .unwrap();
        assert_eq!(
            d.atomic_read(Path::new(".managed.json")).unwrap(),
            b"[\"a\",\"b\"]"
        );
        assert!(!d.is_marked(), "no commit point yet");
        d.atomic_write(Path::new(META), b"{}").unwrap();
        assert_eq!(d.atomic_read(Path::new(META)).unwrap(), b"{}");
        assert!(d.is_marked());
        // No temp file is left behind.
        assert_eq!(names(dir.path()), [".managed.json", META, UNSYNCED_MARK]);
        // A directory opened later sees the mark on disk.
        assert!(IndexDirectory::open(dir.path()).unwrap().is_marked());
    }

    #[test]
    fn made_durable_the_mark_goes_and_the_next_commit_point_brings_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let d = IndexDirectory::open(dir.path()).unwrap();
        let mut w = d.open_write(Path::new("seg.idx")).unwrap();
        w.write_all(b"postings").unwrap();
        w.terminate().unwrap();
        assert!(matches!(
            d.open_write(Path::new("seg.idx")),
            Err(OpenWriteError::FileAlreadyExists(_))
        ));
        d.atomic_write(Path::new(META), b"{}").unwrap();
        d.make_durable(|| Ok(vec![PathBuf::from("seg.idx"), PathBuf::from("gone.idx")]))
            .unwrap();
        assert!(!d.is_marked());
        assert_eq!(names(dir.path()), [META, "seg.idx"]);
        assert!(!IndexDirectory::open(dir.path()).unwrap().is_marked());
        d.atomic_write(Path::new(META), b"{\"n\":1}").unwrap();
        assert!(d.is_marked());
        assert!(dir.path().join(UNSYNCED_MARK).exists());
    }
}
