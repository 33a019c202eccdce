//! `IndexingGuard`: writers share the index, a full rebuild excludes them.
//!
//! Every write path (page save, tag edit, watcher refresh, incremental reindex) holds a
//! [`SharedGuard`] while it touches the index; `kb_reindex rebuild` holds the [`ExclusiveGuard`]
//! while it wipes and refills it, so no write lands in an index that is about to be cleared, and no
//! search-visible half-rebuilt state is mixed with fresh writes. Both waits are bounded by a budget;
//! `None` means the budget passed and the caller answers `VaultLocked` with `retry_after_seconds`.
//!
//! The lock is `parking_lot`'s task-fair `RwLock`: once a rebuild is waiting, new shared
//! acquisitions queue behind it, so a steady stream of writers cannot starve a rebuild. The flip
//! side is that a thread must not take `shared` twice (nested): with a rebuild queued between the
//! two, the inner call waits for the rebuild, which waits for the outer guard, until the budget
//! runs out.

use std::time::Duration;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The exclusive-rebuild lock. One per vault; share it by reference or `Arc`.
#[derive(Debug, Default)]
pub struct IndexingGuard {
    lock: RwLock<()>,
}

/// Held by a writer; released on drop.
#[derive(Debug)]
#[must_use = "the index is only protected while the guard is alive"]
pub struct SharedGuard<'a> {
    _guard: RwLockReadGuard<'a, ()>,
}

/// Held by a full rebuild; released on drop.
#[derive(Debug)]
#[must_use = "the index is only protected while the guard is alive"]
pub struct ExclusiveGuard<'a> {
    _guard: RwLockWriteGuard<'a, ()>,
}

impl IndexingGuard {
    pub fn new() -> Self {
        IndexingGuard {
            lock: RwLock::new(()),
        }
    }

    /// Waits up to `budget` for no rebuild to be running or queued; `None` when the budget passes.
    pub fn shared(&self, budget: Duration) -> Option<SharedGuard<'_>> {
        self.lock
            .try_read_for(budget)
            .map(|guard| SharedGuard { _guard: guard })
    }

    /// Waits up to `budget` for every writer to finish; `None` when the budget passes. While this
    /// call waits, new writers queue behind it.
    pub fn exclusive(&self, budget: Duration) -> Option<ExclusiveGuard<'_>> {
        self.lock
            .try_write_for(budget)
            .map(|guard| ExclusiveGuard { _guard: guard })
    }

    /// Whether a rebuild currently holds the exclusive guard (for status reports).
    pub fn is_rebuilding(&self) -> bool {
        self.lock.is_locked_exclusive()
    }
}
