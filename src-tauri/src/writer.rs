//! The vault's writer (ADR-0007): one thread per opened vault that runs every mutation of the store
//! and the index, in the order they were asked for. Tool writes, `kb_reindex`, the first scan, the
//! watcher and stale reads are its senders; reads never wait for it.
//!
//! Every change of a note's store rows and index docs goes through the same three steps, whoever
//! asked for it (a save, a scan, an external edit):
//! 1. [`App::begin_update`]: the notes are marked as lagging the index (durably, in the store), so
//!    a crash anywhere later is finished by the next scan;
//! 2. [`App::store_pages`] / [`App::index_pages`] / [`App::drop_pages`]: store rows, then index docs;
//! 3. [`App::finish_update`]: one index commit, then the marks cleared.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::sync::{Arc, Weak};
use std::time::Duration;

use pkm_block::StoreError;
use pkm_core::{KbError, KbResult};

use crate::app::App;
use crate::convert::Prepared;

/// A unit of work for the writer thread. What it returns is run once the writer has let go of
/// the app: the answer to a caller who waits for it ([`App::on_writer`]).
pub(crate) type Job = Box<dyn FnOnce(&App) -> Option<Reply> + Send>;

/// Hands a job's answer to the caller waiting for it.
pub(crate) type Reply = Box<dyn FnOnce() + Send>;

thread_local! {
    /// True on a writer thread: a job that asks for writer work runs it inline instead of
    /// queueing behind itself.
    static ON_WRITER: Cell<bool> = const { Cell::new(false) };
}

/// Starts the writer thread of `app`. It holds only a weak reference: when the last `App` handle
/// goes, the job channel closes and the thread ends.
pub(crate) fn spawn(app: Weak<App>, jobs: Receiver<Job>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("stratum-writer".into())
        .spawn(move || {
            ON_WRITER.with(|w| w.set(true));
            while let Ok(job) = jobs.recv() {
                let Some(app) = app.upgrade() else { break };
                let reply = std::panic::catch_unwind(AssertUnwindSafe(|| job(&app)));
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
        })
        .map(|_| ())
}

const PENDING: u8 = 0;
const RUNNING: u8 = 1;
const CANCELLED: u8 = 2;

/// Saves pages to the store (one transaction per call, or into a scan's one transaction) and
/// returns each page's block ids.
pub(crate) type SavePages<'a> = &'a dyn Fn(
    &[(pkm_block::PageRecord, Vec<pkm_block::NewBlock>)],
) -> Result<Vec<Vec<String>>, StoreError>;

impl App {
    /// Queues `job` for the writer without waiting for it.
    pub(crate) fn queue(&self, job: impl FnOnce(&App) + Send + 'static) {
        if ON_WRITER.with(Cell::get) {
            job(self);
            return;
        }
        let job: Job = Box::new(move |app| {
            job(app);
            None
        });
        if self.jobs.send(job).is_err() {
            tracing::error!("the writer thread is gone; a queued update was dropped");
        }
    }

    /// Runs `f` on the writer and waits for its answer. With a `budget`, a job that has not
    /// started within it is cancelled (it will never run) and the caller gets VaultLocked.
    pub(crate) fn on_writer<T: Send + 'static>(
        &self,
        budget: Option<Duration>,
        f: impl FnOnce(&App) -> KbResult<T> + Send + 'static,
    ) -> KbResult<T> {
        if ON_WRITER.with(Cell::get) {
            return f(self);
        }
        let state = Arc::new(AtomicU8::new(PENDING));
        let (tx, rx) = sync_channel::<KbResult<T>>(1);
        let job_state = Arc::clone(&state);
        let job: Job = Box::new(move |app| {
            if job_state
                .compare_exchange(PENDING, RUNNING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let answer = f(app);
                return Some(Box::new(move || {
                    let _ = tx.send(answer);
                }) as Reply);
            }
            None
        });
        self.jobs
            .send(job)
            .map_err(|_| KbError::internal("the vault's writer is gone"))?;
        let gone = || KbError::internal("the vault's writer dropped a request");
        let Some(budget) = budget else {
            return rx.recv().map_err(|_| gone())?;
        };
        match rx.recv_timeout(budget) {
            Ok(r) => r,
            Err(RecvTimeoutError::Disconnected) => Err(gone()),
            Err(RecvTimeoutError::Timeout) => {
                if state
                    .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    let mut e = KbError::locked(budget.as_secs().max(1));
                    e.message = "The vault is busy (an index rebuild or a large update runs); nothing was changed".into();
                    Err(e)
                } else {
                    // It started just now: its answer is on the way.
                    rx.recv().map_err(|_| gone())?
                }
            }
        }
    }

    /// Step 1 of every update: `paths` lag the index from here until [`App::finish_update`].
    pub(crate) fn begin_update(&self, paths: &[&str]) -> KbResult<()> {
        if paths.is_empty() {
            return Ok(());
        }
        self.store.mark_index_lag(paths).map_err(KbError::from)
    }

    /// Step 2a: the pages' store rows, through `save`; returns each page's block ids.
    pub(crate) fn store_pages(
        &self,
        pages: &[&Prepared],
        save: SavePages<'_>,
    ) -> KbResult<Vec<Vec<String>>> {
        let rows: Vec<_> = pages
            .iter()
            .map(|p| (p.record.clone(), p.blocks.clone()))
            .collect();
        save(&rows).map_err(KbError::from)
    }

    /// Step 2b: the pages' index docs, uncommitted. `indexed(path)` says whether the index may hold
    /// docs of the page already (if not, they are added without a delete, which every commit would
    /// otherwise apply to every segment).
    pub(crate) fn index_pages(
        &self,
        pages: &[&Prepared],
        ids: &[Vec<String>],
        indexed: &dyn Fn(&str) -> bool,
    ) -> KbResult<()> {
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

    /// Step 2 for notes whose files are gone: their store rows and index docs (uncommitted).
    pub(crate) fn drop_pages(&self, paths: &[String]) -> KbResult<()> {
        if paths.is_empty() {
            return Ok(());
        }
        self.store.delete_pages(paths).map_err(KbError::from)?;
        for p in paths {
            self.index.delete_page(p).map_err(KbError::from)?;
        }
        self.pages_changed();
        Ok(())
    }

    /// Step 3: one index commit, then `paths` no longer lag.
    pub(crate) fn finish_update(&self, paths: &[&str]) -> KbResult<()> {
        self.index.commit().map_err(KbError::from)?;
        if paths.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.store.clear_index_lag(paths) {
            // Harmless: the notes are re-indexed by the next scan.
            tracing::warn!(error = %e, "could not clear index-lag marks");
        }
        Ok(())
    }
}

impl App {
    /// Queues `f` on the writer and waits up to `wait` for its answer; `None` if it has not
    /// answered by then (it still runs, later). For work that is right whenever it runs.
    pub(crate) fn on_writer_within<T: Send + 'static>(
        &self,
        wait: Duration,
        f: impl FnOnce(&App) -> T + Send + 'static,
    ) -> Option<T> {
        if ON_WRITER.with(Cell::get) {
            return Some(f(self));
        }
        let (tx, rx) = sync_channel::<T>(1);
        self.queue(move |app| {
            let _ = tx.send(f(app));
        });
        rx.recv_timeout(wait).ok()
    }
}
