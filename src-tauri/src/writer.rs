//! The vault's writer (ADR-0007): one thread per opened vault that runs every mutation of the store
//! and the index, in the order they were asked for. Tool writes, `kb_reindex`, the first scan, the
//! watcher and stale reads are its senders (`queue.rs`); reads never wait for it.
//!
//! The writing halves of the store and the index ([`StoreWriter`], [`IndexWriter`]) are opened
//! with the vault and moved into this thread when it starts, inside a [`Writer`]; a job is handed
//! `&mut Writer`, and no other code can reach them. So nothing changes the store or the index off
//! this thread: the types say so, not a habit.
//!
//! Every change of notes' store rows and index docs is one [`Change`], whoever asked for it (a save,
//! a scan, an external edit), opened by [`Writer::change`] for a set of notes:
//! 1. opening it marks the notes as lagging the index (durably, in the store), so a crash anywhere
//!    later is finished by the next scan;
//! 2. [`Change::save`] / [`Change::index`] / [`Change::remove`]: store rows, then index docs;
//! 3. [`Change::finish`]: one index commit, then the marks cleared.
//!
//! A change dropped unfinished (an error on the way) aborts: its open store transaction and its
//! uncommitted index writes are rolled back, and the marks it made are cleared, but for the notes
//! whose store rows it did change (their index docs now lag them, and the next scan redoes them).

use std::cell::Cell;
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Weak;
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use pkm_block::{BlockStore, StoreWriter};
use pkm_core::{KbError, KbResult};
use pkm_index::IndexWriter;

use crate::convert::Prepared;
use crate::lock::VaultLock;

/// Notes per piece of a bulk load into an empty store (`StoreWriter::commit_piece`): each piece's
/// commit lets a thread of the store copy it into the database file while the load goes on.
const PIECE: usize = 1024;

/// A unit of work for the writer thread of an app `A`. What it returns is run once the writer has
/// let go of the app: the answer to a caller who waits for it (`queue.rs`).
pub(crate) type Job<A> = Box<dyn FnOnce(&A, &mut Writer) -> Option<Reply> + Send>;

/// Hands a job's answer to the caller waiting for it.
pub(crate) type Reply = Box<dyn FnOnce() + Send>;

thread_local! {
    /// True on a writer thread: a job must not wait for another job (it would wait for itself).
    static ON_WRITER: Cell<bool> = const { Cell::new(false) };
}

/// The writing halves of one vault: its store's and its index's, and its lead. Owned by the
/// vault's writer thread; not `Clone`, never handed out but as `&mut` to a job.
pub(crate) struct Writer {
    store: StoreWriter,
    index: IndexWriter,
    /// The vault's leadership, given up only once the store and the index are closed (fields drop
    /// in order), so the next leader can open them at once.
    _lead: VaultLock,
}

impl Writer {
    pub(crate) fn new(store: StoreWriter, index: IndexWriter, lead: VaultLock) -> Writer {
        Writer {
            store,
            index,
            _lead: lead,
        }
    }

    /// Opens a change of the notes at `paths`: from here until [`Change::finish`] they lag the
    /// index (a durable mark in the store).
    pub(crate) fn change(&mut self, paths: &[&str]) -> KbResult<Change<'_>> {
        let mut change = Change {
            store: &mut self.store,
            index: &mut self.index,
            marked: Vec::new(),
            new_marks: Vec::new(),
            stored: HashSet::new(),
            in_transaction: None,
            bulk: false,
            pieces: false,
            index_dirty: false,
            finished: false,
        };
        change.mark(paths)?;
        Ok(change)
    }

    /// Marks every note `store` holds as lagging the index (an index recreated empty).
    pub(crate) fn mark_all_lagging(&mut self, store: &BlockStore) -> KbResult<()> {
        let stored = store.fingerprints().map_err(KbError::from)?;
        let paths: Vec<&str> = stored.keys().map(String::as_str).collect();
        self.store.lag_new_index(&paths).map_err(KbError::from)?;
        Ok(())
    }

    /// Sets a value of the store's meta table (not part of any note's change).
    pub(crate) fn set_meta(&mut self, key: &str, value: &str) -> KbResult<()> {
        self.store.set_meta(key, value).map_err(KbError::from)
    }
}

/// One change of notes' store rows and index docs (see the module's text): opened by
/// [`Writer::change`], ended by [`Change::finish`], aborted when dropped unfinished.
#[must_use = "a change dropped unfinished is rolled back"]
pub(crate) struct Change<'w> {
    store: &'w mut StoreWriter,
    index: &'w mut IndexWriter,
    /// Every note this change marked as lagging; [`Change::finish`] clears them all.
    marked: Vec<String>,
    /// The marks this change made (the note did not lag before); an abort clears them, but for
    /// the notes in `stored`.
    new_marks: Vec<String>,
    /// Notes whose store rows this change has committed: their marks outlive an abort.
    stored: HashSet<String>,
    /// The notes saved or removed in the store transaction [`Change::in_one_transaction`] opened;
    /// stored once it commits.
    in_transaction: Option<Vec<String>>,
    /// That transaction is a bulk load (`StoreWriter::begin_bulk`).
    bulk: bool,
    /// That transaction is a bulk load into an empty store, committed every [`PIECE`] notes.
    pieces: bool,
    /// Whether index writes wait for the commit (an abort rolls them back).
    index_dirty: bool,
    finished: bool,
}

impl Change<'_> {
    /// Adds the notes at `paths` to the change (notes found gone on the way).
    pub(crate) fn mark(&mut self, paths: &[&str]) -> KbResult<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let new = self.store.mark_index_lag(paths).map_err(KbError::from)?;
        self.new_marks.extend(new);
        self.marked.extend(paths.iter().map(|p| (*p).to_owned()));
        Ok(())
    }

    /// From here every store write of the change goes into one transaction, committed by
    /// [`Change::finish`] (a rebuild, the first scan: a transaction per chunk would write every
    /// page of the block-id index to the WAL once per chunk). With `bulk_load`, when most of the
    /// store is written, the store's random-keyed indexes are built once at the commit
    /// (`StoreWriter::begin_bulk`); building one sorts every row, so a first scan that finds a
    /// few notes changed keeps them. A bulk load into an empty store (a new vault's first scan)
    /// is committed every [`PIECE`] notes (`StoreWriter::commit_piece`); the notes stay marked
    /// as lagging until the index commits.
    pub(crate) fn in_one_transaction(&mut self, bulk_load: bool) -> KbResult<()> {
        if bulk_load {
            self.store.begin_bulk()
        } else {
            self.store.begin_transaction()
        }
        .map_err(KbError::from)?;
        self.in_transaction = Some(Vec::new());
        self.bulk = bulk_load;
        self.pieces = self.store.commits_in_pieces();
        Ok(())
    }

    fn stored(&mut self, paths: impl IntoIterator<Item = String>) {
        match &mut self.in_transaction {
            Some(pending) => pending.extend(paths),
            None => self.stored.extend(paths),
        }
    }

    /// Commits the piece of a bulk load into an empty store once it holds `at_least` notes: they
    /// are stored from here (an abort keeps their marks).
    fn commit_piece(&mut self, at_least: usize) -> KbResult<()> {
        if !self.pieces {
            return Ok(());
        }
        let Some(pending) = self
            .in_transaction
            .as_mut()
            .filter(|p| p.len() >= at_least.max(1))
        else {
            return Ok(());
        };
        let committed = self.store.commit_piece();
        // On an error the piece may have committed or not (the store's transaction has ended
        // either way): its notes keep their marks, which at worst re-indexes them.
        self.stored.extend(pending.drain(..));
        if committed.is_err() {
            self.in_transaction = None;
        }
        committed.map_err(KbError::from)
    }

    /// Step 2a: the pages' store rows; returns each page's block ids.
    pub(crate) fn save(&mut self, pages: &[&Prepared]) -> KbResult<Vec<Vec<String>>> {
        let rows: Vec<_> = pages
            .iter()
            .map(|p| (&p.record, p.blocks.as_slice()))
            .collect();
        let ids = self.store.save_pages(&rows).map_err(KbError::from)?;
        self.stored(pages.iter().map(|p| p.record.path.as_str().to_owned()));
        self.commit_piece(PIECE)?;
        Ok(ids)
    }

    /// Steps 1 and 2a in one store transaction, for pages whose files are already written (the
    /// write path): the pages marked as lagging the index and their rows saved, committed
    /// together; returns each page's block ids. Until the commit the store holds the pages as
    /// they were, so a crash before it leaves files that differ from their rows, which the next
    /// scan finds by itself (mtime, size, hash); from the commit on, the marks are there with the
    /// rows. One transaction instead of two: a mark of its own was the write path's third.
    pub(crate) fn save_marked(&mut self, pages: &[&Prepared]) -> KbResult<Vec<Vec<String>>> {
        self.in_one_transaction(false)?;
        let paths: Vec<&str> = pages.iter().map(|p| p.record.path.as_str()).collect();
        self.mark(&paths)?;
        let ids = self.save(pages)?;
        if let Some(pending) = self.in_transaction.take() {
            self.store.commit_transaction().map_err(KbError::from)?;
            self.stored.extend(pending);
        }
        Ok(ids)
    }

    /// Step 2a for pages of which some moved (`Some(old path)`): their store rows in one
    /// transaction, a moved page keeping the block ids it had at its old path, whose rows go
    /// (their index docs go with [`Change::unindex`]); returns each page's block ids. Both paths
    /// must be in the change.
    pub(crate) fn save_moved(
        &mut self,
        pages: &[(&Prepared, Option<&str>)],
    ) -> KbResult<Vec<Vec<String>>> {
        let rows: Vec<_> = pages
            .iter()
            .map(|(p, from)| (p.record.clone(), p.blocks.clone(), from.map(str::to_owned)))
            .collect();
        let ids = self.store.save_moved_pages(&rows).map_err(KbError::from)?;
        let mut paths = Vec::new();
        for (p, from) in pages {
            paths.push(p.record.path.as_str().to_owned());
            paths.extend(from.map(str::to_owned));
        }
        self.stored(paths);
        Ok(ids)
    }

    /// The index docs of notes whose store rows went with [`Change::save_moved`] (uncommitted).
    pub(crate) fn unindex(&mut self, paths: &[String]) -> KbResult<()> {
        self.index_dirty = true;
        for p in paths {
            self.index.delete_page(p).map_err(KbError::from)?;
        }
        Ok(())
    }

    /// Step 2b: the pages' index docs, uncommitted. `indexed(path)` says whether the index may hold
    /// docs of the page already (if not, they are added without a delete, which every commit would
    /// otherwise apply to every segment).
    pub(crate) fn index(
        &mut self,
        pages: &[&Prepared],
        ids: &[Vec<String>],
        indexed: &dyn Fn(&str) -> bool,
    ) -> KbResult<()> {
        self.index_dirty = true;
        for (p, ids) in pages.iter().zip(ids) {
            let path = p.record.path.as_str();
            let note = p.index_doc(ids);
            if indexed(path) {
                self.index.replace_page(path, &note)
            } else {
                self.index.add_page(path, &note)
            }
            .map_err(KbError::from)?;
        }
        Ok(())
    }

    /// [`Change::index`] for notes already made into their index docs (a scan moves each note's
    /// text into its doc, [`Prepared::into_index_doc`], instead of copying it).
    pub(crate) fn index_docs(
        &mut self,
        notes: &[(pkm_core::VaultPath, pkm_index::NoteDoc)],
        indexed: &dyn Fn(&str) -> bool,
    ) -> KbResult<()> {
        self.index_dirty = true;
        for (path, note) in notes {
            let path = path.as_str();
            if indexed(path) {
                self.index.replace_page(path, note)
            } else {
                self.index.add_page(path, note)
            }
            .map_err(KbError::from)?;
        }
        Ok(())
    }

    /// Step 2 for notes whose files are gone: their store rows and index docs (uncommitted). The
    /// caller tells the app that pages changed (`App::pages_changed`).
    pub(crate) fn remove(&mut self, paths: &[String]) -> KbResult<()> {
        if paths.is_empty() {
            return Ok(());
        }
        self.store.delete_pages(paths).map_err(KbError::from)?;
        self.stored(paths.iter().cloned());
        self.index_dirty = true;
        for p in paths {
            self.index.delete_page(p).map_err(KbError::from)?;
        }
        Ok(())
    }

    /// Removes every doc from the index (a rebuild), uncommitted.
    pub(crate) fn clear_index(&mut self) -> KbResult<()> {
        self.index_dirty = true;
        self.index.clear().map_err(KbError::from)
    }

    /// Step 3: the store transaction committed (if one is open), one index commit, then the
    /// change's notes no longer lag. On an error the change aborts.
    pub(crate) fn finish(mut self) -> KbResult<()> {
        // A load in pieces commits its last notes before the store builds its indexes, so that
        // the checkpointer copies them meanwhile (`StoreWriter::commit_transaction`).
        self.commit_piece(1)?;
        let mut stamp = None;
        if let Some(pending) = self.in_transaction.take() {
            if self.index_dirty {
                stamp = Some(self.commit_both(pending)?);
            } else {
                self.store.commit_transaction().map_err(KbError::from)?;
                self.stored.extend(pending);
            }
        }
        if self.index_dirty {
            stamp = Some(self.index.commit().map_err(KbError::from)?);
            self.index_dirty = false;
        }
        self.finished = true;
        let marked: Vec<&str> = self.marked.iter().map(String::as_str).collect();
        // The commit's stamp goes with the marks' removal: should a machine crash take the
        // commit and not this, the next open finds the index older than the store says it is,
        // and rebuilds it (ADR-0024).
        let cleared = match stamp {
            Some(stamp) => self.store.indexed(&marked, stamp),
            None if marked.is_empty() => Ok(()),
            None => self.store.clear_index_lag(&marked),
        };
        if let Err(e) = cleared {
            // Harmless: the notes are re-indexed by the next scan.
            tracing::warn!(error = %e, "could not clear index-lag marks");
        }
        Ok(())
    }

    /// The store's transaction and the index's commit at once, on two threads: a bulk load's
    /// store commit builds its indexes (a sort each) and checkpoints while the index writes its
    /// last segment, which one after the other left a core idle at the end of a cold index.
    /// Searches see the new index once both are committed. When the index committed and the
    /// store did not, the index is ahead of the store's rows: every note of the change stays
    /// marked as lagging, so the next scan puts them back in step.
    fn commit_both(&mut self, pending: Vec<String>) -> KbResult<u64> {
        let (store, index, bulk) = (&mut *self.store, &mut *self.index, self.bulk);
        let (stored, indexed) = std::thread::scope(|s| {
            let committing = std::thread::Builder::new()
                .name("stratum-index-commit".into())
                .spawn_scoped(s, move || {
                    let stamp = index.commit_unpublished()?;
                    // A bulk load's index is synced while the store builds its indexes, rather
                    // than at the close, after everything else (~25 ms of syncs at 10k notes).
                    if bulk && let Err(e) = index.make_durable() {
                        // The index keeps its mark: the next open checks its files.
                        tracing::warn!(error = %e, "cannot sync the index after a bulk load");
                    }
                    Ok(stamp)
                });
            let stored = store.commit_transaction();
            let indexed = committing.ok().map(|thread| {
                thread.join().unwrap_or_else(|_| {
                    Err(pkm_index::IndexError::Io(std::io::Error::other(
                        "the index commit panicked",
                    )))
                })
            });
            (stored, indexed)
        });
        // No thread to spare: the index's commit after the store's.
        let indexed = match indexed {
            Some(indexed) => indexed,
            None if stored.is_ok() => self.index.commit_unpublished(),
            None => Err(pkm_index::IndexError::Io(std::io::Error::other(
                "the store did not commit",
            ))),
        };
        match (stored, indexed) {
            (Ok(()), indexed) => {
                self.stored.extend(pending);
                let stamp = indexed.map_err(KbError::from)?;
                self.index_dirty = false;
                self.index.publish().map_err(KbError::from)?;
                Ok(stamp)
            }
            (Err(e), Ok(_)) => {
                self.index_dirty = false;
                self.stored.extend(pending);
                self.stored.extend(self.new_marks.iter().cloned());
                Err(e.into())
            }
            (Err(e), Err(_)) => Err(e.into()),
        }
    }

    /// Undoes what the change has not committed, and the marks of the notes whose store rows
    /// it did not change.
    fn abort(&mut self) {
        if self.in_transaction.take().is_some()
            && let Err(e) = self.store.rollback_transaction()
        {
            tracing::warn!(error = %e, "cannot roll the store back after a failed change");
        }
        if self.index_dirty
            && let Err(e) = self.index.rollback()
        {
            tracing::warn!(error = %e, "cannot roll the index back after a failed change");
        }
        let unchanged: Vec<&str> = self
            .new_marks
            .iter()
            .filter(|p| !self.stored.contains(*p))
            .map(String::as_str)
            .collect();
        if !unchanged.is_empty()
            && let Err(e) = self.store.clear_index_lag(&unchanged)
        {
            // Harmless: the notes are re-indexed by the next scan.
            tracing::warn!(error = %e, "could not clear index-lag marks");
        }
    }
}

impl Drop for Change<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.abort();
        }
    }
}

/// Starts the writer thread of `app`, owning `writer`. It holds only a weak reference to the app:
/// when the last handle goes, the thread ends and closes the store and the index (`App`'s `Drop`
/// waits for that).
pub(crate) fn spawn<A: Send + Sync + 'static>(
    app: Weak<A>,
    jobs: Receiver<Job<A>>,
    mut writer: Writer,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("stratum-writer".into())
        .spawn(move || {
            ON_WRITER.with(|w| w.set(true));
            while let Ok(job) = jobs.recv() {
                let Some(app) = app.upgrade() else { break };
                let reply = std::panic::catch_unwind(AssertUnwindSafe(|| job(&app, &mut writer)));
                // Let go before answering: a caller that then drops the last handle closes the
                // vault (and frees its lead) at once, not whenever this thread gets to it.
                drop(app);
                match reply {
                    Ok(Some(reply)) => reply(),
                    Ok(None) => {}
                    Err(_) => tracing::error!(
                        "a writer job panicked; the writer goes on with the next one"
                    ),
                }
            }
            drop(writer);
        })
}

/// Whether the calling thread is a vault's writer thread.
pub(crate) fn on_writer_thread() -> bool {
    ON_WRITER.with(Cell::get)
}
