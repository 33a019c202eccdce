//! The one write path, used by every mutating command:
//!
//! validate, then on the vault's writer thread (one mutation at a time; a rebuild excludes the
//! rest), the `expected_modified` check (mismatch = Conflict, zero mutation), a temp file in the same
//! folder with fsync, rename and fsync of the folder, the SQLite transaction, the index commit
//! (read-your-writes), the own-save record for the watcher, and the hooks once the writer has
//! answered. A delete removes the file and the folders it leaves empty, each folder fsynced, before
//! the transaction.
//!
//! If a folder fsync or the transaction fails, the previous file (bytes and mtime) is put back, so
//! the file and the store never disagree, and the write answers an error. An index failure leaves
//! file and store correct and marks the index stale until the next reindex: the index is a cache of
//! the notes.

use std::ffi::OsString;
use std::io::Write;
use std::time::{Duration, SystemTime};

use pkm_core::folder::sync_folder;
use pkm_core::{ErrorKind, KbError, KbResult, VaultPath, time};

use crate::app::App;
use crate::convert::{Prepared, prepare};
use crate::read_failure::ReadFailure;
use crate::writer::Writer;

pub use crate::faults::{FaultInjector, Step};

/// What a mutation does with the note it was shown.
pub(crate) enum Edit {
    Write(String),
    Delete,
    Keep,
}

/// The note as it is on disk when the write lock is taken.
pub(crate) struct Current {
    pub bytes: Option<Vec<u8>>,
    pub mtime: Option<SystemTime>,
}

impl Current {
    pub fn text(&self) -> Option<&str> {
        self.bytes
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// What the write left behind.
pub(crate) enum Outcome {
    Written(Box<Prepared>, Vec<String>),
    Deleted,
    Unchanged,
}

/// The error for a note path naming a FIFO, socket, device or folder: only regular files are notes.
pub(crate) fn not_regular(path: &VaultPath) -> KbError {
    KbError::invalid(format!("Not a regular file: {path}"))
        .with_note(path.as_str())
        .with_hint("Only regular files are notes; FIFOs, sockets and devices are never read.")
}

/// The error for a note path that leads outside the vault (or into `.pkm/`) through a symbolic
/// link, found when the file is opened (a symlink swapped in after the path was checked).
pub(crate) fn escapes(path: &VaultPath) -> KbError {
    KbError::invalid(format!(
        "Path leads outside the vault through a symbolic link: {path}"
    ))
    .with_note(path.as_str())
    .with_hint("Only files inside the vault are notes; a symbolic link may lead to another place in the vault, not out of it.")
}

pub(crate) fn io_error(what: &str, path: &VaultPath, e: &std::io::Error) -> KbError {
    if crate::read_failure::is_escape(e) {
        tracing::warn!(note = %path, "{what} refused: the path leads outside the vault");
        return escapes(path);
    }
    tracing::error!(note = %path, error = %e, "{what} failed");
    let msg = match e.kind() {
        std::io::ErrorKind::PermissionDenied => format!("{what} failed: permission denied"),
        std::io::ErrorKind::StorageFull => format!("{what} failed: the disk is full"),
        _ => format!("{what} failed"),
    };
    KbError::new(ErrorKind::External, msg)
        .with_note(path.as_str())
        .with_hint("The note was left as it was before this call. Fix the cause and retry.")
}

/// The name of the temp file a save of note `name` writes first: `.<start of name>.<32 hex>.tmp`,
/// a dot-name (scans and listings never take it for a note), unique, and within the 255 bytes a
/// file name may have however long the note's name is (its start is cut at a char boundary).
fn temp_name(name: &str) -> OsString {
    let mut keep = (pkm_core::path::SEGMENT_MAX_BYTES - ".".len() - ".".len() - 32 - ".tmp".len())
        .min(name.len());
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    OsString::from(format!(
        ".{}.{}.tmp",
        &name[..keep],
        uuid::Uuid::new_v4().simple()
    ))
}

/// Whether `name` is one of [`temp_name`]'s, left behind by a save that was cut short.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with('.')
        && name
            .strip_suffix(".tmp")
            .and_then(|s| s.rsplit_once('.'))
            .is_some_and(|(_, hex)| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl App {
    /// Installs a hook that may fail any step of a save. For fault-injection tests only: the
    /// seam exists with the `test-support` feature, which only the tests turn on.
    #[cfg(feature = "test-support")]
    pub fn set_fault_injector(&self, injector: Option<FaultInjector>) {
        *self.faults.write() = injector;
    }

    #[cfg(feature = "test-support")]
    pub(crate) fn step(&self, s: Step) -> std::io::Result<()> {
        match self.faults.read().as_ref() {
            Some(f) => f(s),
            None => Ok(()),
        }
    }

    #[cfg(not(feature = "test-support"))]
    pub(crate) fn step(&self, _: Step) -> std::io::Result<()> {
        Ok(())
    }

    /// Writes `bytes` to the note at `path` atomically: a temp file beside it, fsynced, renamed
    /// over it, and the folder fsynced, all relative to the folder's handle (opened beneath the
    /// vault's, its missing folders created). The new mtime is `exact` when given, else strictly
    /// after `not_before`, so that `modified_at` changes on every write even within one clock tick.
    pub(crate) fn atomic_write(
        &self,
        path: &VaultPath,
        bytes: &[u8],
        not_before: Option<SystemTime>,
        exact: Option<SystemTime>,
    ) -> std::io::Result<SystemTime> {
        let folder = self.root.parent(path.as_str(), true)?;
        let tmp = temp_name(&folder.name().to_string_lossy());
        let result = (|| {
            self.step(Step::TempCreate)?;
            let mut f = folder.create_new(&tmp)?;
            self.step(Step::TempWrite)?;
            f.write_all(bytes)?;
            let written = f.metadata()?.modified()?;
            let target = match (exact, not_before) {
                (Some(t), _) => Some(t),
                (None, Some(prev)) if written <= prev => Some(prev + Duration::from_nanos(1000)),
                _ => None,
            };
            if let Some(t) = target {
                f.set_modified(t)?;
            }
            self.step(Step::TempSync)?;
            f.sync_all()?;
            self.step(Step::Rename)?;
            folder.rename_over(&tmp)?;
            Ok(f)
        })();
        let f = match result {
            Ok(f) => f,
            Err(e) => {
                let _ = folder.remove(Some(&tmp));
                return Err(e);
            }
        };
        self.step(Step::DirSync)?;
        sync_folder(|| folder.sync())?;
        f.metadata()?.modified()
    }

    /// Puts the previous state of a note back after a failed transaction.
    fn restore(&self, path: &VaultPath, before: &Current) {
        let outcome = match (&before.bytes, before.mtime) {
            (Some(bytes), mtime) => self.atomic_write(path, bytes, None, mtime).map(|_| ()),
            (None, _) => self.root.parent(path.as_str(), false).and_then(|folder| {
                folder
                    .remove(None)
                    .and_then(|_| sync_folder(|| folder.sync()))
            }),
        };
        if let Err(e) = outcome {
            tracing::error!(note = %path, error = %e, "could not restore the note after a failed save");
        }
    }

    /// [`App::restore`] when the note on disk is not as it was before (a step after the rename
    /// or the removal failed); not after a path that leads out of the vault, which changed nothing.
    fn restore_if_changed(&self, path: &VaultPath, before: &Current, e: &std::io::Error) {
        if !crate::read_failure::is_escape(e)
            && self.root.read_regular(path.as_str()).ok().map(|(b, _)| b) != before.bytes
        {
            self.restore(path, before);
        }
    }

    /// The one write path. `f` sees the note as it is on disk when the writer takes the request,
    /// and decides the change. Waits up to `write_budget` for the writer to take it (a rebuild
    /// may hold it), then VaultLocked with nothing changed.
    pub(crate) fn mutate<T: Send + 'static>(
        &self,
        path: &VaultPath,
        expected_modified: Option<&str>,
        f: impl FnOnce(&Current) -> KbResult<(Edit, T)> + Send + 'static,
    ) -> KbResult<(Outcome, T)> {
        self.mutate_seeing_app(path, expected_modified, move |_, current| f(current))
    }

    /// [`App::mutate`] for a change that reads the store as it decides (a block's id): `f` sees
    /// the app too, on the writer thread, where nothing changes the store meanwhile.
    pub(crate) fn mutate_seeing_app<T: Send + 'static>(
        &self,
        path: &VaultPath,
        expected_modified: Option<&str>,
        f: impl FnOnce(&App, &Current) -> KbResult<(Edit, T)> + Send + 'static,
    ) -> KbResult<(Outcome, T)> {
        let expected = match expected_modified {
            None => None,
            Some(s) => Some(time::parse_rfc3339(s).ok_or_else(|| {
                KbError::invalid(format!(
                    "expected_modified is not an RFC 3339 timestamp: {s:?}"
                ))
                .with_hint("Pass the modified_at string a previous {open_page} returned.")
            })?),
        };
        let owned = path.clone();
        let (outcome, extra) = self
            .on_writer(Some(self.config.write_budget), move |app, writer| {
                app.mutate_on_writer(writer, &owned, expected, f)
            })?;
        self.dispatch_hooks(path, &outcome);
        Ok((outcome, extra))
    }

    /// [`App::mutate`] on the writer thread: nothing else changes the store or the index meanwhile.
    fn mutate_on_writer<T>(
        &self,
        writer: &mut Writer,
        path: &VaultPath,
        expected: Option<SystemTime>,
        f: impl FnOnce(&App, &Current) -> KbResult<(Edit, T)>,
    ) -> KbResult<(Outcome, T)> {
        let current = self.read_current(path)?;
        if let Some(exp) = expected
            && current.mtime != Some(exp)
        {
            let shown = current
                .mtime
                .map(time::to_rfc3339)
                .unwrap_or_else(|| "deleted".into());
            return Err(KbError::new(
                ErrorKind::Conflict,
                format!("Note changed since {}: now {shown}", time::to_rfc3339(exp)),
            )
            .with_note(path.as_str())
            .with_hint(
                "Read it again with {open_page}, merge, and write with the new modified_at.",
            ));
        }
        let (change, extra) = f(self, &current)?;
        let outcome = match change {
            Edit::Keep => Outcome::Unchanged,
            Edit::Write(text) => self.write_note(writer, path, &text, &current)?,
            Edit::Delete => self.delete_note(writer, path, &current)?,
        };
        Ok((outcome, extra))
    }

    /// The note as it is on disk before a mutation (`bytes: None` when there is none).
    pub(crate) fn read_current(&self, path: &VaultPath) -> KbResult<Current> {
        match self.root.read_regular(path.as_str()) {
            Ok((bytes, meta)) => Ok(Current {
                mtime: meta.modified().ok(),
                bytes: Some(bytes),
            }),
            Err(ReadFailure::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(Current {
                bytes: None,
                mtime: None,
            }),
            Err(ReadFailure::NotRegular) => Err(not_regular(path)),
            Err(ReadFailure::Escapes) => Err(escapes(path)),
            Err(ReadFailure::Io(e)) => Err(io_error("reading the note", path, &e)),
        }
    }

    /// Writes `text` as the note, then its store rows, then its index docs (one change); on a
    /// failure before the store has the new text, the note is put back as `current` was.
    fn write_note(
        &self,
        writer: &mut Writer,
        path: &VaultPath,
        text: &str,
        current: &Current,
    ) -> KbResult<Outcome> {
        let mut prepared = prepare(
            &self.dialect,
            path,
            text,
            SystemTime::now(),
            text.len() as u64,
        );
        if let Some(why) = &prepared.frontmatter_error {
            return Err(
                KbError::invalid(format!("frontmatter is not valid YAML: {why}"))
                    .with_note(path.as_str())
                    .with_hint("Fix the YAML between the --- fences, or remove them."),
            );
        }
        // Marked as lagging with its store rows (`Change::save_marked`), cleared after the index
        // commit: a crash before the store commit leaves the file newer than its row, and one
        // after leaves the note lagging; either way the next scan re-indexes it.
        let mut change = writer.change(&[])?;
        // Recorded before the file changes, so the watcher knows the rename's event as
        // our echo however soon it arrives.
        self.record_own_save(path, Some(&prepared.record.hash));
        let mtime = match self.atomic_write(path, text.as_bytes(), current.mtime, None) {
            Ok(mtime) => mtime,
            Err(e) => {
                self.record_own_save(path, None);
                // A failure after the rename (the folder fsync) leaves the new text in
                // place while the store still has the old: put the old one back.
                self.restore_if_changed(path, current, &e);
                return Err(io_error("writing the note", path, &e));
            }
        };
        prepared.record.mtime_ns = time::to_nanos(mtime);
        prepared.record.modified_at = time::to_rfc3339(mtime);
        let old_row = self.store.get_page(path).ok().flatten();
        let saved = self
            .step(Step::StoreTransaction)
            .map_err(|e| KbError::external(&format!("store transaction: {e}")))
            .and_then(|_| change.save_marked(&[&prepared]));
        let ids = match saved.map(|mut ids| ids.pop().unwrap_or_default()) {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(note = %path, error = %e, "store transaction failed; restoring the note");
                self.restore(path, current);
                self.record_own_save(path, None);
                return Err(KbError::external("saving the note to the store")
                    .with_note(path.as_str())
                    .with_hint("The note was left as it was before this call. Retry; if it persists, check the server log."));
            }
        };
        let renamed = prepared.has_block_refs()
            || old_row.as_ref().is_none_or(|r| {
                r.title != prepared.record.title || r.aliases != prepared.record.aliases
            });
        if renamed {
            self.pages_changed();
        }
        let indexed = self
            .step(Step::IndexCommit)
            .map_err(|e| KbError::external(&e.to_string()))
            .and_then(|_| change.index(&[&prepared], std::slice::from_ref(&ids), &|_| true))
            .and_then(|_| change.finish());
        if let Err(e) = indexed {
            tracing::error!(note = %path, error = %e, "index refresh failed; the note lags the index until the next reindex");
        }
        Ok(Outcome::Written(Box::new(prepared), ids))
    }

    /// Deletes the note's file and the folders that leaves empty, then its store rows and index
    /// docs (one change); on a failure before the store has let go of the note, the note is put
    /// back as `current` was.
    fn delete_note(
        &self,
        writer: &mut Writer,
        path: &VaultPath,
        current: &Current,
    ) -> KbResult<Outcome> {
        if current.bytes.is_none() {
            return Err(KbError::not_found(path.as_str()));
        }
        let mut change = writer.change(&[path.as_str()])?;
        self.record_own_save(path, Some(""));
        if let Err(e) = self
            .step(Step::Remove)
            .and_then(|_| self.remove_note_file(path))
        {
            self.record_own_save(path, None);
            self.restore_if_changed(path, current, &e);
            return Err(io_error("deleting the note", path, &e));
        }
        let removed = self
            .step(Step::StoreTransaction)
            .map_err(|e| KbError::external(&format!("store transaction: {e}")))
            .and_then(|_| change.remove(&[path.as_str().to_owned()]));
        if let Err(e) = removed {
            tracing::error!(note = %path, error = %e, "store transaction failed; restoring the note");
            self.restore(path, current);
            self.record_own_save(path, None);
            return Err(
                KbError::external("deleting the note from the store").with_note(path.as_str())
            );
        }
        self.pages_changed();
        if let Err(e) = change.finish() {
            tracing::error!(note = %path, error = %e, "index refresh failed; the note lags the index until the next reindex");
        }
        Ok(Outcome::Deleted)
    }

    /// Removes the note's file, then the folders that leaves empty, each removal made durable.
    fn remove_note_file(&self, path: &VaultPath) -> std::io::Result<()> {
        let folder = self.root.parent(path.as_str(), false)?;
        folder.remove(None)?;
        self.step(Step::DirSync)?;
        sync_folder(|| folder.sync())?;
        self.remove_empty_folders(path)
    }

    /// Removes the folders a delete left empty, from the note's folder up to (not including) the
    /// vault root, each relative to its parent's handle, and makes that durable. Only an empty
    /// folder is removed (not a symlink to one), so the first one that still holds anything (a
    /// hidden file too) stays, and so does every folder above it.
    pub(crate) fn remove_empty_folders(&self, note: &VaultPath) -> std::io::Result<()> {
        let mut last_removed = None;
        let mut dir = Some(note.parent()).filter(|d| !d.is_empty());
        while let Some(d) = dir {
            match self.root.parent(d, false).and_then(|f| f.remove_dir()) {
                Ok(()) => {
                    last_removed = Some(d);
                    dir = d.rsplit_once('/').map(|(up, _)| up);
                }
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::DirectoryNotEmpty {
                        tracing::debug!(error = %e, "an emptied folder stays");
                    }
                    break;
                }
            }
        }
        match last_removed {
            Some(d) => {
                let folder = self.root.parent(d, false)?;
                self.step(Step::DirSync)?;
                sync_folder(|| folder.sync())
            }
            None => Ok(()),
        }
    }

    /// What the watcher should take for our own echo at `path`: the content hash we are writing
    /// (`""` for a delete), or nothing when the write was undone.
    pub(crate) fn record_own_save(&self, path: &VaultPath, hash: Option<&str>) {
        let mut own = self.own_saves.lock();
        match hash {
            Some(h) => own.insert(path.as_str().to_owned(), h.to_owned()),
            None => own.remove(path.as_str()),
        };
    }

    fn dispatch_hooks(&self, path: &VaultPath, outcome: &Outcome) {
        let hooks = self.hooks.read().clone();
        for h in hooks {
            match outcome {
                Outcome::Written(p, _) => {
                    h.on_save(path.as_str());
                    h.on_link(path.as_str(), &p.link_targets());
                }
                Outcome::Deleted => h.on_delete(path.as_str()),
                Outcome::Unchanged => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_temp_name, temp_name};

    #[test]
    fn recognises_only_write_temp_files() {
        assert!(is_temp_name(
            ".note.md.0123456789abcdef0123456789abcdef.tmp"
        ));
        assert!(!is_temp_name(
            "note.md.0123456789abcdef0123456789abcdef.tmp"
        ));
        assert!(!is_temp_name(".note.md.tmp"));
        assert!(!is_temp_name(".hidden.md"));
        for name in ["note.md".to_owned(), "東".repeat(85)] {
            let tmp = temp_name(&name).into_string().unwrap();
            assert!(is_temp_name(&tmp) && tmp.len() <= 255, "{tmp}");
        }
    }
}
