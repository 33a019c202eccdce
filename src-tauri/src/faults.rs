//! The write path's fault-injection seam: the steps of a save, a delete or a multi-file change
//! (`batch.rs`) at which a test may make it fail (`App::set_fault_injector`, with the `test-support` feature only).

use std::sync::Arc;

/// The steps of a save at which a failure can be injected (see `App::set_fault_injector`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    TempCreate,
    TempWrite,
    TempSync,
    Rename,
    DirSync,
    StoreTransaction,
    IndexCommit,
    Remove,
    /// A multi-file change: before its journal is written (`journal.rs`).
    JournalWrite,
    /// A multi-file change: before its journal is removed, the change done.
    JournalRemove,
}

pub type FaultInjector = Arc<dyn Fn(Step) -> std::io::Result<()> + Send + Sync>;
