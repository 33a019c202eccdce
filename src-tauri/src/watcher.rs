//! The file watcher: brings the store and the index up to date when another program creates,
//! changes, renames or deletes notes behind the server's back.
//!
//! Events are debounced (a burst of saves from an editor becomes one update per note). The
//! server's own saves are recognised by content hash, not by a time window: an event whose file
//! hashes to what the server last wrote is its echo and is dropped, so another program's edit
//! landing just after ours is never mistaken for ours. While changes wait, `index_fresh` is false.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use pkm_core::{KbError, KbResult, VaultPath};

use crate::app::App;
use crate::convert::sha256_hex;
use crate::scan::{self, ScanMode};

/// How long the watcher waits for a burst of events to settle.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// A running watcher; dropping it stops watching.
pub struct VaultWatcher {
    _watcher: notify::RecommendedWatcher,
}

enum Change {
    Note(VaultPath),
    /// A folder moved or something we cannot attribute to one note: rescan incrementally.
    Rescan,
}

/// Starts watching the vault of `app` on a background thread.
pub fn watch(app: &Arc<App>) -> KbResult<VaultWatcher> {
    let (tx, rx) = channel::<notify::Result<notify::Event>>();
    let mut watcher = notify::recommended_watcher(tx).map_err(|e| {
        tracing::error!(error = %e, "cannot start the file watcher");
        KbError::external("starting the file watcher")
    })?;
    watcher
        .watch(app.vault().root(), RecursiveMode::Recursive)
        .map_err(|e| {
            tracing::error!(error = %e, "cannot watch the vault");
            KbError::external("watching the vault")
        })?;
    let app = Arc::clone(app);
    std::thread::Builder::new()
        .name("stratum-watcher".into())
        .spawn(move || run(&app, &rx))
        .map_err(|_| KbError::external("starting the watcher thread"))?;
    Ok(VaultWatcher { _watcher: watcher })
}

fn classify(app: &App, path: &std::path::Path, kind: &EventKind) -> Option<Change> {
    if matches!(kind, EventKind::Access(_)) {
        return None;
    }
    let rel = path.strip_prefix(app.vault().root()).ok()?;
    // Anything under a dot-folder (.pkm, .git) or a dot-file (our temp files) is not a note.
    if rel
        .components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
    {
        return None;
    }
    match VaultPath::from_abs(app.vault(), path) {
        Ok(p) => Some(Change::Note(p)),
        // A folder event (rename, removal) may move many notes at once.
        Err(_) if path.is_dir() || path.extension().is_none() => Some(Change::Rescan),
        Err(_) => None,
    }
}

fn run(app: &App, rx: &Receiver<notify::Result<notify::Event>>) {
    loop {
        // Block until something happens: an idle vault costs no CPU.
        let first = match rx.recv() {
            Ok(ev) => ev,
            Err(_) => return,
        };
        let mut notes: HashSet<VaultPath> = HashSet::new();
        let mut rescan = false;
        let mut take = |ev: notify::Result<notify::Event>| match ev {
            Ok(ev) => {
                for p in &ev.paths {
                    match classify(app, p, &ev.kind) {
                        Some(Change::Note(n)) => {
                            let fresh = notes.insert(n);
                            if fresh {
                                app.pending.fetch_add(1, Ordering::AcqRel);
                            }
                        }
                        Some(Change::Rescan) => rescan = true,
                        None => {}
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "watcher error; rescanning");
                rescan = true;
            }
        };
        take(first);
        loop {
            match rx.recv_timeout(DEBOUNCE) {
                Ok(ev) => take(ev),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let count = notes.len() as u64;
        if rescan && let Err(e) = scan::scan(app, ScanMode::Incremental) {
            tracing::warn!(error = %e, "rescan after a folder change failed");
        }
        for note in notes {
            apply(app, &note);
        }
        app.pending.fetch_sub(count, Ordering::AcqRel);
    }
}

/// Applies one note's change unless it is the echo of our own save.
fn apply(app: &App, note: &VaultPath) {
    let abs: PathBuf = app.vault().abs(note);
    let now = std::fs::read(&abs)
        .ok()
        .map(|b| sha256_hex(&b))
        .unwrap_or_default();
    {
        let mut own = app.own_saves.lock();
        if own.get(note.as_str()) == Some(&now) {
            own.remove(note.as_str());
            return;
        }
    }
    match scan::sync_one(app, note) {
        Ok(true) => tracing::info!(note = %note, "applied an external change"),
        Ok(false) => {}
        Err(e) => tracing::warn!(note = %note, error = %e, "could not apply an external change"),
    }
}
