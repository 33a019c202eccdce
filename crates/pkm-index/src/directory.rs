//! The directory the search index lives in: Tantivy's [`MmapDirectory`], except that the list of
//! files Tantivy manages (`.managed.json`) is replaced without a sync (ADR-0022).
//!
//! Tantivy rewrites that list, synced, each time it creates a file: six times per commit of one
//! note, beside the nine syncs the commit needs (each new file, the deletes, the folder, the
//! commit point `meta.json`). The list only tells Tantivy's garbage collector which files it may
//! delete. Losing its last versions in a machine crash (the OS had not written them yet) makes it
//! name fewer files, which are then never collected (disk, not data), or leaves it unreadable,
//! which makes the index fail to open: the vault then rebuilds it ([`crate::IndexEngine::open`]).
//! A process that dies leaves nothing unwritten: the OS holds what it wrote.
//!
//! Everything else, the segment files, their deletes and `meta.json` above all, is written and
//! synced exactly as [`MmapDirectory`] does.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tantivy::Directory;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// The file Tantivy keeps its list of managed files in.
const MANAGED_LIST: &str = ".managed.json";

/// Tantivy's memory-mapped directory at `root`, but for the unsynced managed list.
#[derive(Clone, Debug)]
pub(crate) struct IndexDirectory {
    inner: MmapDirectory,
    root: PathBuf,
}

impl IndexDirectory {
    pub(crate) fn open(root: &Path) -> tantivy::Result<IndexDirectory> {
        Ok(IndexDirectory {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
        })
    }
}

/// Writes `data` to `path` by a rename over it, without a sync: a reader sees the old bytes or
/// the new ones, never part of either.
fn replace_unsynced(path: &Path, data: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::other("the managed list has no file name"))?;
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
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if path == Path::new(MANAGED_LIST) {
            replace_unsynced(&self.root.join(path), data)
        } else {
            self.inner.atomic_write(path, data)
        }
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
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

    #[test]
    fn the_managed_list_is_replaced_whole_and_other_files_go_through_tantivy() {
        let dir = tempfile::tempdir().unwrap();
        let d = IndexDirectory::open(dir.path()).unwrap();
        d.atomic_write(Path::new(MANAGED_LIST), b"[\"a\"]").unwrap();
        d.atomic_write(Path::new(MANAGED_LIST), b"[\"a\",\"b\"]")
            .unwrap();
        assert_eq!(
            d.atomic_read(Path::new(MANAGED_LIST)).unwrap(),
            b"[\"a\",\"b\"]"
        );
        d.atomic_write(Path::new("meta.json"), b"{}").unwrap();
        assert_eq!(d.atomic_read(Path::new("meta.json")).unwrap(), b"{}");
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        // No temp file is left behind.
        assert_eq!(names, [MANAGED_LIST, "meta.json"]);
    }
}
