//! What the watcher has seen change and the writer has not applied yet, for `index_fresh`.
//!
//! A change seen is not necessarily a change pending: a `kb_reindex` (or a save) may already have
//! brought the store up to date with the file while the watcher's event for it still waits in the
//! writer's queue. So a note seen counts against freshness only while its file differs from what
//! the store holds of it ([`Pending::settled`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use parking_lot::Mutex;
use pkm_core::VaultPath;

/// Pending notes compared with the store at most by one freshness check; a burst larger than this
/// (a `git checkout`) counts as pending until the writer has applied it.
const MOST_CHECKED: usize = 256;

/// The watcher's changes not yet applied by the writer.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Notes seen changing, with the number of bursts holding each that the writer has not applied.
    notes: Mutex<HashMap<VaultPath, usize>>,
    /// Rescans asked for and not yet run.
    rescans: AtomicU64,
}

impl Pending {
    /// The watcher saw `note` change; it is pending until [`Pending::applied`].
    pub(crate) fn note_seen(&self, note: &VaultPath) {
        *self.notes.lock().entry(note.clone()).or_default() += 1;
    }

    /// The watcher asked for a rescan; it is pending until [`Pending::applied`].
    pub(crate) fn rescan_seen(&self) {
        self.rescans.fetch_add(1, Ordering::AcqRel);
    }

    /// The writer has applied a burst of `notes` (and a rescan, when `rescan`).
    pub(crate) fn applied(&self, notes: &[VaultPath], rescan: bool) {
        if rescan {
            self.rescans.fetch_sub(1, Ordering::AcqRel);
        }
        let mut pending = self.notes.lock();
        for note in notes {
            if let Some(count) = pending.get_mut(note) {
                *count -= 1;
                if *count == 0 {
                    pending.remove(note);
                }
            }
        }
    }

    /// Whether nothing the watcher saw is still to be applied: no rescan waits, and every note
    /// seen is as the store has it (`current(note)`: its file has the fingerprint the store
    /// holds, or is gone and so is its row).
    pub(crate) fn settled(&self, current: impl Fn(&VaultPath) -> bool) -> bool {
        if self.rescans.load(Ordering::Acquire) > 0 {
            return false;
        }
        let seen: Vec<VaultPath> = {
            let pending = self.notes.lock();
            if pending.len() > MOST_CHECKED {
                return false;
            }
            pending.keys().cloned().collect()
        };
        seen.iter().all(current)
    }
}

/// Whether a file of `mtime` and `size` is the one whose fingerprint `(mtime_ns, size)` the store
/// holds. The scan reads a file again exactly when this is false (or the note lags the index).
pub(crate) fn same_fingerprint(stored: (i64, u64), mtime: SystemTime, size: u64) -> bool {
    stored == (pkm_core::time::to_nanos(mtime), size)
}
