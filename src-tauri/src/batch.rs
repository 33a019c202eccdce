//! One change of many notes, all or none (issue #34, ADR-0020): notes rewritten in place and
//! notes moved, applied by the writer as one change, journaled so that a crash at any step leaves
//! a vault that the next open finishes or undoes, never a mix.
//!
//! [`App::mutate_files`] runs the caller's plan on the writer thread (the store current, nothing
//! else writing), then:
//! 1. checks every file against the bytes the plan read (and that no move's target exists):
//!    Conflict, nothing changed, when one differs;
//! 2. parses every new text, and opens one writer `Change` over every path touched (old and new);
//! 3. writes the journal (`journal.rs`) and makes it durable;
//! 4. writes every new file (the one write path's `atomic_write`: temp file, fsync, rename, folder
//!    fsync), then removes every moved note's old file and the folders that leaves empty;
//! 5. saves every store row in one transaction (a moved note keeps its block ids), then the index
//!    docs in one commit, so a search sees the vault before or after;
//! 6. removes the journal.
//!
//! A failure at steps 3 to 5 (before the store transaction commits) undoes the files from the
//! journal and answers an error; a failure after it (the index commit, the journal's removal)
//! leaves the change done, as the one write path does. A crash anywhere after step 3 is finished
//! at the next open ([`App::recover_journal`]).

use std::collections::HashSet;
use std::time::SystemTime;

use pkm_core::folder::sync_folder;
use pkm_core::{ErrorKind, KbError, KbResult, VaultPath, time};

use crate::app::App;
use crate::convert::{Prepared, prepare};
use crate::faults::Step;
use crate::journal::{self, Entry, Found};
use crate::read_failure::ReadFailure;
use crate::write_path::io_error;
use crate::writer::Writer;

/// One file of a multi-file change, with the bytes the planner read from disk.
#[derive(Debug, Clone)]
pub enum FileChange {
    /// Rewrite a note in place (its links rewritten).
    Write {
        path: VaultPath,
        before: Vec<u8>,
        text: String,
    },
    /// Move a note: `from` goes away, `to` (which must not exist) holds `text` (the note's bytes,
    /// or with its own relative links rewritten). The note keeps its block ids.
    Move {
        from: VaultPath,
        to: VaultPath,
        before: Vec<u8>,
        text: String,
    },
}

/// What an applied change did, told to the hooks once the writer has answered.
#[derive(Default)]
struct Applied {
    /// Notes written (rewritten, or moved in), with their link targets.
    saved: Vec<(VaultPath, Vec<String>)>,
    /// Notes moved away.
    deleted: Vec<VaultPath>,
}

/// Which way a journaled change is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Back,
}

/// What a file of a journal entry holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Absent,
    Before,
    After,
    /// Anything else: another text (a person's edit), or not a readable regular file.
    Other,
}

fn conflict(path: &VaultPath, message: String) -> KbError {
    KbError::new(ErrorKind::Conflict, message)
        .with_note(path.as_str())
        .with_hint("Nothing was changed. Read the notes again and retry.")
}

impl App {
    /// Runs `plan` on the writer thread (the store current, nothing else writing meanwhile), then
    /// applies every change it returns or none: Conflict (nothing changed) when a file no longer
    /// holds `before` (it changed, or is gone) or a `to` exists. Returns plan's extra value.
    /// Waits up to `write_budget` for the writer, like [`App::mutate`], then VaultLocked with
    /// nothing changed.
    pub(crate) fn mutate_files<T: Send + 'static>(
        &self,
        plan: impl FnOnce(&App) -> KbResult<(Vec<FileChange>, T)> + Send + 'static,
    ) -> KbResult<T> {
        let (applied, extra) =
            self.on_writer(Some(self.config.write_budget), move |app, writer| {
                app.finish_leftover_journal(writer)?;
                let (changes, extra) = plan(app)?;
                let applied = app.apply_files(writer, changes)?;
                Ok((applied, extra))
            })?;
        let hooks = self.hooks.read().clone();
        for h in hooks {
            for path in &applied.deleted {
                h.on_delete(path.as_str());
            }
            for (path, targets) in &applied.saved {
                h.on_save(path.as_str());
                h.on_link(path.as_str(), targets);
            }
        }
        Ok(extra)
    }

    /// [`App::mutate_files`] with a plan that is already made. For tests only (feature
    /// `test-support`): the commands call `mutate_files`.
    #[cfg(feature = "test-support")]
    pub fn apply_file_changes(&self, changes: Vec<FileChange>) -> KbResult<()> {
        self.mutate_files(move |_| Ok((changes, ())))
    }

    /// A journal this process left (its removal, or an undo, failed): settled before the next
    /// change; an error when it still cannot be.
    fn finish_leftover_journal(&self, writer: &mut Writer) -> KbResult<()> {
        if !journal::path(&self.vault).exists() || self.recover_journal(writer) {
            return Ok(());
        }
        Err(KbError::external(
            "finishing an earlier change of several notes",
        )
        .with_hint("Nothing was changed. An earlier change could not be finished; the server log says why."))
    }

    /// Steps 1 to 6 of the module's text, on the writer.
    fn apply_files(&self, writer: &mut Writer, changes: Vec<FileChange>) -> KbResult<Applied> {
        if changes.is_empty() {
            return Ok(Applied::default());
        }
        let (entries, mut prepared) = self.check_and_prepare(changes)?;
        let mut touched: Vec<&str> = Vec::new();
        for e in &entries {
            touched.push(e.before_at.as_str());
            if e.moves() {
                touched.push(e.after_at.as_str());
            }
        }
        let mut change = writer.change(&touched)?;
        if let Err(e) = self
            .step(Step::JournalWrite)
            .and_then(|_| journal::write(&self.vault, &entries))
        {
            tracing::error!(error = %e, "cannot write the journal of a change of several notes");
            if journal::remove(&self.vault).is_err() {
                // Whatever is there must never be rolled forward: nothing was changed.
                let _ = journal::mark_back(&self.vault);
            }
            return Err(KbError::external("writing the change's journal")
                .with_hint("Nothing was changed. Fix the cause (disk full?) and retry."));
        }
        for (e, p) in entries.iter().zip(&prepared) {
            self.record_own_save(&e.after_at, Some(&p.record.hash));
            if e.moves() {
                self.record_own_save(&e.before_at, Some(""));
            }
        }
        let mtimes = match self.write_files(&entries) {
            Ok(m) => m,
            Err((path, err)) => {
                drop(change);
                self.undo(&entries);
                return Err(io_error("writing a note of the change", &path, &err).with_hint(
                    "No note was changed: every file was put back as it was. Fix the cause and retry.",
                ));
            }
        };
        for (p, m) in prepared.iter_mut().zip(&mtimes) {
            p.record.mtime_ns = time::to_nanos(*m);
            p.record.modified_at = time::to_rfc3339(*m);
        }
        let rows: Vec<(&Prepared, Option<&str>)> = prepared
            .iter()
            .zip(&entries)
            .map(|(p, e)| (p, e.moves().then_some(e.before_at.as_str())))
            .collect();
        let saved = self
            .step(Step::StoreTransaction)
            .map_err(|e| KbError::external(&format!("store transaction: {e}")))
            .and_then(|_| change.save_moved(&rows));
        let ids = match saved {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(error = %e, "store transaction of a change of several notes failed; undoing it");
                drop(change);
                self.undo(&entries);
                return Err(
                    KbError::external("saving the change to the store").with_hint(
                        "No note was changed. Retry; if it persists, check the server log.",
                    ),
                );
            }
        };
        self.pages_changed();
        let moved_away: Vec<String> = entries
            .iter()
            .filter(|e| e.moves())
            .map(|e| e.before_at.as_str().to_owned())
            .collect();
        let pages: Vec<&Prepared> = prepared.iter().collect();
        let indexed = self
            .step(Step::IndexCommit)
            .map_err(|e| KbError::external(&e.to_string()))
            .and_then(|_| change.index(&pages, &ids, &|_| true))
            .and_then(|_| change.unindex(&moved_away))
            .and_then(|_| change.finish());
        if let Err(e) = indexed {
            tracing::error!(error = %e, "index refresh failed; the notes lag the index until the next reindex");
        }
        if let Err(e) = self
            .step(Step::JournalRemove)
            .and_then(|_| journal::remove(&self.vault))
        {
            // The change is done; the journal, rolled forward, changes nothing more.
            tracing::error!(error = %e, "cannot remove the journal of a finished change; the next change or open removes it");
        }
        Ok(Applied {
            saved: entries
                .iter()
                .zip(&prepared)
                .map(|(e, p)| (e.after_at.clone(), p.link_targets()))
                .collect(),
            deleted: entries
                .into_iter()
                .filter(|e| e.moves())
                .map(|e| e.before_at)
                .collect(),
        })
    }

    /// Step 1 and the parse of step 2: the journal entries and the parsed new texts, or Conflict
    /// (or Invalid: a path named twice, a frontmatter that is not YAML) with nothing changed.
    fn check_and_prepare(&self, changes: Vec<FileChange>) -> KbResult<(Vec<Entry>, Vec<Prepared>)> {
        let mut named = HashSet::new();
        for c in &changes {
            let paths = match c {
                FileChange::Write { path, .. } => vec![path],
                FileChange::Move { from, to, .. } => vec![from, to],
            };
            for p in paths {
                if !named.insert(p.as_str().to_owned()) {
                    return Err(KbError::invalid(format!(
                        "{p} is named twice in one change of several notes"
                    ))
                    .with_note(p.as_str()));
                }
            }
        }
        let now = SystemTime::now();
        let mut entries = Vec::with_capacity(changes.len());
        let mut prepared = Vec::with_capacity(changes.len());
        for c in changes {
            let (before_at, after_at, before, text) = match c {
                FileChange::Write { path, before, text } => (path.clone(), path, before, text),
                FileChange::Move {
                    from,
                    to,
                    before,
                    text,
                } => (from, to, before, text),
            };
            let current = self.read_current(&before_at)?;
            match &current.bytes {
                None => {
                    return Err(conflict(
                        &before_at,
                        format!("Note deleted since the change was planned: {before_at}"),
                    ));
                }
                Some(b) if *b != before => {
                    return Err(conflict(
                        &before_at,
                        format!("Note changed since the change was planned: {before_at}"),
                    ));
                }
                Some(_) => {}
            }
            let mut new_folder = None;
            if before_at != after_at {
                if self.read_current(&after_at)?.bytes.is_some() {
                    return Err(conflict(
                        &after_at,
                        format!("A note already exists at {after_at}"),
                    ));
                }
                new_folder = self.first_missing_folder(&after_at);
            }
            let p = prepare(&self.dialect, &after_at, &text, now, text.len() as u64);
            if let Some(why) = &p.frontmatter_error {
                return Err(
                    KbError::invalid(format!("frontmatter is not valid YAML: {why}"))
                        .with_note(after_at.as_str()),
                );
            }
            entries.push(Entry {
                before_at,
                after_at,
                before,
                before_mtime_ns: current.mtime.map(time::to_nanos),
                after: text.into_bytes(),
                new_folder,
            });
            prepared.push(p);
        }
        Ok((entries, prepared))
    }

    /// The topmost folder above `path` that does not exist (the one a write of `path` creates).
    fn first_missing_folder(&self, path: &VaultPath) -> Option<String> {
        let folder = path.parent();
        let ends = folder.match_indices('/').map(|(i, _)| i);
        ends.chain((!folder.is_empty()).then_some(folder.len()))
            .map(|end| &folder[..end])
            .find(|d| {
                matches!(self.root.facts(d), Err(ref e) if e.kind() == std::io::ErrorKind::NotFound)
            })
            .map(str::to_owned)
    }

    /// Removes the folders an undone move had created for its new path (`new_folder` and those
    /// under it on the way to the note), where they are empty, and makes that durable.
    fn remove_new_folders(&self, e: &Entry) -> std::io::Result<()> {
        let Some(top) = e.new_folder.as_deref() else {
            return Ok(());
        };
        let mut last_removed = None;
        let mut dir = Some(e.after_at.parent()).filter(|d| !d.is_empty());
        while let Some(d) = dir {
            if !(d == top || d.starts_with(&format!("{top}/"))) {
                break;
            }
            match self.root.parent(d, false).and_then(|f| f.remove_dir()) {
                Ok(()) => {
                    last_removed = Some(d);
                    dir = d.rsplit_once('/').map(|(up, _)| up);
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    dir = d.rsplit_once('/').map(|(up, _)| up);
                }
                Err(_) => break,
            }
        }
        match last_removed {
            Some(d) => {
                let folder = self.root.parent(d, false)?;
                sync_folder(|| folder.sync())
            }
            None => Ok(()),
        }
    }

    /// Step 4: every new file written, then every moved note's old file removed, then the
    /// folders that leaves empty; the new files' mtimes. The first failure stops it, naming the
    /// note.
    fn write_files(
        &self,
        entries: &[Entry],
    ) -> Result<Vec<SystemTime>, (VaultPath, std::io::Error)> {
        let mut mtimes = Vec::with_capacity(entries.len());
        for e in entries {
            let not_before = if e.moves() {
                None
            } else {
                e.before_mtime_ns.map(time::from_nanos)
            };
            let m = self
                .atomic_write(&e.after_at, &e.after, not_before, None)
                .map_err(|err| (e.after_at.clone(), err))?;
            mtimes.push(m);
        }
        for e in entries.iter().filter(|e| e.moves()) {
            self.step(Step::Remove)
                .and_then(|_| self.remove_durably(&e.before_at))
                .map_err(|err| (e.before_at.clone(), err))?;
        }
        for e in entries.iter().filter(|e| e.moves()) {
            self.remove_empty_folders(&e.before_at)
                .map_err(|err| (e.before_at.clone(), err))?;
        }
        Ok(mtimes)
    }

    /// Removes a note's file and makes that durable (the folders it leaves empty stay).
    fn remove_durably(&self, path: &VaultPath) -> std::io::Result<()> {
        let folder = self.root.parent(path.as_str(), false)?;
        folder.remove(None)?;
        self.step(Step::DirSync)?;
        sync_folder(|| folder.sync())
    }

    /// Undoes a change that failed on the way (before its store transaction committed): the
    /// journal turned to roll back, every file put back, the journal removed. What cannot be put
    /// back now stays journaled, for the next change or open.
    fn undo(&self, entries: &[Entry]) {
        for e in entries {
            self.record_own_save(&e.after_at, None);
            self.record_own_save(&e.before_at, None);
        }
        if let Err(e) = journal::mark_back(&self.vault) {
            tracing::error!(error = %e, "cannot mark the journal for roll-back");
        }
        if self.settle(entries, Direction::Back) {
            if let Err(e) = journal::remove(&self.vault) {
                tracing::error!(error = %e, "cannot remove the journal of an undone change");
            }
        } else {
            tracing::error!(
                "a change of several notes could not be undone in full; the next change or open finishes undoing it"
            );
        }
    }

    /// What the file at `path` holds against entry `e`.
    fn state_of(&self, path: &VaultPath, e: &Entry) -> State {
        match self.root.read_regular(path.as_str()) {
            Ok((bytes, _)) => {
                if *path == e.after_at && bytes == e.after {
                    State::After
                } else if *path == e.before_at && bytes == e.before {
                    State::Before
                } else {
                    State::Other
                }
            }
            Err(ReadFailure::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
                State::Absent
            }
            Err(_) => State::Other,
        }
    }

    /// Brings every file of `entries` to its state before (`Back`) or after (`Forward`), from
    /// whatever step of the change it is at. A file in neither state, nor in one the change's own
    /// steps leave (a person edited it since), is kept as it is and logged. False when a file
    /// could not be written or removed.
    fn settle(&self, entries: &[Entry], direction: Direction) -> bool {
        let mut clean = true;
        for e in entries {
            let done = if e.moves() {
                self.settle_move(e, direction)
            } else {
                self.settle_write(e, direction)
            };
            match done {
                Ok(true) => {}
                Ok(false) => tracing::warn!(
                    note = %e.before_at,
                    to = %e.after_at,
                    ?direction,
                    "a note of an unfinished change was edited since; it is kept as it is"
                ),
                Err(err) => {
                    tracing::error!(note = %e.after_at, error = %err, ?direction, "cannot settle a note of an unfinished change");
                    clean = false;
                }
            }
        }
        clean
    }

    /// A rewrite in place settled; `Ok(false)` when the note is kept as a person left it.
    fn settle_write(&self, e: &Entry, direction: Direction) -> std::io::Result<bool> {
        let exact = e.before_mtime_ns.map(time::from_nanos);
        match (self.state_of(&e.after_at, e), direction) {
            (State::After, Direction::Forward) | (State::Before, Direction::Back) => Ok(true),
            (State::Before, Direction::Forward) => self
                .atomic_write(&e.after_at, &e.after, exact, None)
                .map(|_| true),
            (State::After, Direction::Back) => self
                .atomic_write(&e.before_at, &e.before, None, exact)
                .map(|_| true),
            (State::Absent | State::Other, _) => Ok(false),
        }
    }

    /// A move settled from any of the states its steps go through: (before, absent) → (before,
    /// after) → (absent, after); `Ok(false)` for any other (a person's edit), kept as it is.
    fn settle_move(&self, e: &Entry, direction: Direction) -> std::io::Result<bool> {
        let from = self.state_of(&e.before_at, e);
        let to = self.state_of(&e.after_at, e);
        let exact = e.before_mtime_ns.map(time::from_nanos);
        match (from, to, direction) {
            (State::Before, State::Absent, Direction::Forward) => {
                self.atomic_write(&e.after_at, &e.after, None, None)?;
                self.remove_durably(&e.before_at)?;
            }
            (State::Before, State::After, Direction::Forward) => {
                self.remove_durably(&e.before_at)?;
            }
            (State::Absent, State::After, Direction::Forward)
            | (State::Before, State::Absent, Direction::Back) => {}
            (State::Absent, State::After, Direction::Back) => {
                self.atomic_write(&e.before_at, &e.before, None, exact)?;
                self.remove_durably(&e.after_at)?;
            }
            (State::Before, State::After, Direction::Back) => {
                self.remove_durably(&e.after_at)?;
            }
            _ => return Ok(false),
        }
        // The folders the move empties (forward) or had created (back) go, as the change's own
        // steps remove them.
        match direction {
            Direction::Forward => self.remove_empty_folders(&e.before_at)?,
            Direction::Back => self.remove_new_folders(e)?,
        }
        Ok(true)
    }

    /// [`App::recover_journal`] at open (`App::open_leading`), on the writer, waited for.
    pub(crate) fn recover_at_open(&self) -> KbResult<()> {
        if !journal::path(&self.vault).exists() {
            return Ok(());
        }
        self.on_writer(None, |app, writer| {
            app.recover_journal(writer);
            Ok(())
        })
    }

    /// Finishes a change of several notes cut short (a crash, or a failure this process could
    /// not undo): forward, or back when its journal was marked so; then the store and the index
    /// brought in line with the files it touched (a moved note keeping its block ids), and the
    /// journal removed. At open, before the first scan ([`App::recover_at_open`]), and before a
    /// change when this process left a journal. True when no journal is left.
    pub(crate) fn recover_journal(&self, writer: &mut Writer) -> bool {
        let (entries, back) = match journal::read(&self.vault) {
            Ok(Found::None) => return true,
            Ok(Found::Unreadable) => {
                match journal::set_aside(&self.vault) {
                    Ok(aside) => tracing::error!(
                        kept = %aside.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
                        "the journal of a change of several notes is unreadable; the notes are left as they are and the journal is kept in .pkm/"
                    ),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot set an unreadable journal aside");
                        return false;
                    }
                }
                return true;
            }
            Ok(Found::Journal { entries, back }) => (entries, back),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the journal of a change of several notes");
                return false;
            }
        };
        let direction = if back {
            Direction::Back
        } else {
            Direction::Forward
        };
        tracing::warn!(
            notes = entries.len(),
            ?direction,
            "finishing a change of several notes that was cut short"
        );
        let clean = self.settle(&entries, direction);
        if let Err(e) = self.carry_moved_rows(writer, &entries) {
            tracing::warn!(error = %e, "cannot carry the store rows of moved notes; the scan reads them again");
        }
        let mut paths: Vec<VaultPath> = Vec::new();
        for e in &entries {
            paths.push(e.before_at.clone());
            if e.moves() {
                paths.push(e.after_at.clone());
            }
        }
        if let Err(e) = crate::scan::sync_paths(self, writer, &paths) {
            tracing::warn!(error = %e, "cannot bring the store in line with a finished change; the next scan does");
        }
        if !clean {
            return false;
        }
        match journal::remove(&self.vault) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot remove the journal of a finished change");
                false
            }
        }
    }

    /// For each moved note whose file is at one of its two paths while the store still holds it
    /// at the other: its store rows saved at the file's path, keeping their block ids, in one
    /// change.
    fn carry_moved_rows(&self, writer: &mut Writer, entries: &[Entry]) -> KbResult<()> {
        let mut carried: Vec<(Prepared, VaultPath)> = Vec::new();
        for e in entries.iter().filter(|e| e.moves()) {
            for (here, there) in [(&e.after_at, &e.before_at), (&e.before_at, &e.after_at)] {
                let file = self.root.read_regular(here.as_str());
                let gone = matches!(
                    self.root.facts(there.as_str()),
                    Err(ref err) if err.kind() == std::io::ErrorKind::NotFound
                );
                let (Ok((bytes, meta)), true) = (file, gone) else {
                    continue;
                };
                let rows_there = self.store.get_page(there).map_err(KbError::from)?.is_some();
                let rows_here = self.store.get_page(here).map_err(KbError::from)?.is_some();
                let (Ok(text), true, false) = (String::from_utf8(bytes), rows_there, rows_here)
                else {
                    continue;
                };
                let mtime = meta.modified().unwrap_or_else(|_| SystemTime::now());
                let p = prepare(&self.dialect, here, &text, mtime, meta.len());
                carried.push((p, there.clone()));
            }
        }
        if carried.is_empty() {
            return Ok(());
        }
        let mut touched: Vec<&str> = Vec::new();
        for (p, there) in &carried {
            touched.push(p.record.path.as_str());
            touched.push(there.as_str());
        }
        let mut change = writer.change(&touched)?;
        let rows: Vec<(&Prepared, Option<&str>)> = carried
            .iter()
            .map(|(p, there)| (p, Some(there.as_str())))
            .collect();
        let ids = change.save_moved(&rows)?;
        self.pages_changed();
        let pages: Vec<&Prepared> = carried.iter().map(|(p, _)| p).collect();
        let gone: Vec<String> = carried
            .iter()
            .map(|(_, there)| there.as_str().to_owned())
            .collect();
        change.index(&pages, &ids, &|_| true)?;
        change.unindex(&gone)?;
        change.finish()
    }
}
