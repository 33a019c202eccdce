//! Handing work to the vault's writer thread (`writer.rs`): queued without waiting, or waited for,
//! within a budget or not.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::Duration;

use pkm_core::{KbError, KbResult};

use crate::app::App;
use crate::writer::{Job, Reply, Writer, on_writer_thread};

const PENDING: u8 = 0;
const RUNNING: u8 = 1;
const CANCELLED: u8 = 2;

impl App {
    /// Queues `job` for the writer without waiting for it (from a writer job too: it runs after
    /// the current one).
    pub(crate) fn queue(&self, job: impl FnOnce(&App, &mut Writer) + Send + 'static) {
        let job: Job<App> = Box::new(move |app, writer| {
            job(app, writer);
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
        f: impl FnOnce(&App, &mut Writer) -> KbResult<T> + Send + 'static,
    ) -> KbResult<T> {
        if on_writer_thread() {
            return Err(KbError::internal(
                "a writer job waited for another writer job",
            ));
        }
        let state = Arc::new(AtomicU8::new(PENDING));
        let (tx, rx) = sync_channel::<KbResult<T>>(1);
        let job_state = Arc::clone(&state);
        let job: Job<App> = Box::new(move |app, writer| {
            if job_state
                .compare_exchange(PENDING, RUNNING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let answer = f(app, writer);
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

    /// Queues `f` on the writer and waits up to `wait` for its answer; `None` if it has not
    /// answered by then (it still runs, later). For work that is right whenever it runs.
    pub(crate) fn on_writer_within<T: Send + 'static>(
        &self,
        wait: Duration,
        f: impl FnOnce(&App, &mut Writer) -> T + Send + 'static,
    ) -> Option<T> {
        if on_writer_thread() {
            return None;
        }
        let (tx, rx) = sync_channel::<T>(1);
        self.queue(move |app, writer| {
            let _ = tx.send(f(app, writer));
        });
        rx.recv_timeout(wait).ok()
    }
}
