//! The file watcher: brings the store and the index up to date when another program creates,
//! changes, renames or deletes notes behind the server's back. The leading process of a vault runs
//! one whenever it serves (ADR-0007).
//!
//! Events are debounced (a burst of saves from an editor, or a `git checkout` of many files,
//! becomes one update per note) and handed to the vault's writer as one job. The server's own
//! saves are recognised by content hash, not by a time window: an event whose file hashes to what
//! the server last wrote is its echo and is dropped, so another program's edit landing just after
//! ours is never mistaken for ours. From the first event of a burst until the writer has applied
//! it, `index_fresh` is false.
//!
//! A folder event, an event queue overflow or a watcher error becomes an incremental rescan. When
//! the OS runs out of watches (inotify's `max_user_watches`), the watcher falls back to polling,
//! with one warning.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};
use pkm_core::{KbError, KbResult, VaultPath};

use crate::app::App;
use crate::convert::sha256_hex;
use crate::scan;
use crate::writer::Writer;

/// How long the watcher waits for a burst of events to settle.
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// The poll interval when none is given.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// How changes made by other programs are noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// The OS's file events (inotify, FSEvents, ReadDirectoryChangesW); polling every `poll`
    /// when they cannot be had (no watcher, or the OS's watch limit is reached).
    Auto { poll: Duration },
    /// Compare the vault's files every interval (network shares, some containers).
    Poll(Duration),
    /// Not at all: external edits reach the index on `kb_reindex` or at the next start.
    Off,
}

/// A running watcher; dropping it stops watching.
pub struct VaultWatcher {
    control: Sender<Msg>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for VaultWatcher {
    /// Stops the watcher and waits for its thread, which holds the app: once this returns, the
    /// watcher no longer keeps the vault open (the last handle closes it, ADR-0024's clean close).
    fn drop(&mut self) {
        let _ = self.control.send(Msg::Stop);
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

enum Msg {
    Event(notify::Result<notify::Event>),
    Stop,
}

enum Change {
    Note(VaultPath),
    /// A folder moved or something we cannot attribute to one note: rescan incrementally.
    Rescan,
}

type AnyWatcher = Box<dyn Watcher + Send>;

/// A watcher of the vault's notes, as `mode` says (see [`watch_tree`]).
fn start(app: &App, tx: &Sender<Msg>, mode: WatchMode) -> notify::Result<AnyWatcher> {
    let tx = tx.clone();
    let handler = move |ev| {
        let _ = tx.send(Msg::Event(ev));
    };
    // Symlinked folders are not watched, as the scan does not enter them: a folder swapped for
    // a symlink to elsewhere never has the watcher look there.
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut w: AnyWatcher = match mode {
        WatchMode::Poll(interval) => Box::new(notify::PollWatcher::new(
            handler,
            config.with_poll_interval(interval),
        )?),
        _ => Box::new(notify::RecommendedWatcher::new(handler, config)?),
    };
    watch_tree(app, &mut w)?;
    Ok(w)
}

/// Watches the vault's own folder by itself (the notes in it, and the folders made, moved or
/// removed there) and each of its folders with everything under it, except the folders whose
/// events [`ignored`] drops anyway: dot-folders and the app's folder. Above all the server's
/// own `.pkm/`, whose store and index files change at every write: watched with the rest of the
/// vault, each write woke the watcher some seventy times for them (every append to the store's
/// WAL, every index segment file made and removed), a quarter of a write's CPU spent on the
/// cores the write itself needs.
fn watch_tree(app: &App, w: &mut AnyWatcher) -> notify::Result<()> {
    let root = app.vault().root();
    w.watch(root, RecursiveMode::NonRecursive)?;
    let mut folders = Vec::new();
    app.root.list(|rel| {
        folders.push(root.join(rel));
        false
    });
    for folder in folders {
        watch_folder(app, w, &folder)?;
    }
    Ok(())
}

/// Watches `path`, a folder in the vault's own folder, with everything under it, unless
/// [`ignored`]. A folder gone meanwhile is no error (its removal is an event of the vault's
/// folder).
fn watch_folder(app: &App, w: &mut AnyWatcher, path: &Path) -> notify::Result<()> {
    if ignored(app, path) {
        return Ok(());
    }
    match w.watch(path, RecursiveMode::Recursive) {
        Err(e)
            if matches!(&e.kind, notify::ErrorKind::PathNotFound)
                || matches!(&e.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Whether `path` is a folder in the vault's own folder (not a symlink to one): the watcher
/// watches it from when it appears there (made, or moved in).
fn new_top_folder(app: &App, path: &Path) -> bool {
    path.parent() == Some(app.vault().root())
        && path.file_name().is_some_and(|name| {
            app.root
                .facts(&name.to_string_lossy())
                .is_ok_and(|f| f.kind == crate::beneath::Kind::Dir)
        })
}

/// Starts watching the vault of `app` with OS events (polling if they cannot be had).
pub fn watch(app: &Arc<App>) -> KbResult<VaultWatcher> {
    watch_with(
        app,
        WatchMode::Auto {
            poll: DEFAULT_POLL_INTERVAL,
        },
    )
    .and_then(|w| w.ok_or_else(|| KbError::internal("no watcher")))
}

/// Starts watching the vault of `app` as `mode` says; `None` for [`WatchMode::Off`].
pub fn watch_with(app: &Arc<App>, mode: WatchMode) -> KbResult<Option<VaultWatcher>> {
    let (tx, rx) = channel::<Msg>();
    let watcher = match mode {
        WatchMode::Off => return Ok(None),
        WatchMode::Poll(_) => start(app, &tx, mode),
        WatchMode::Auto { poll } => start(app, &tx, mode).or_else(|e| {
            tracing::warn!(error = %e, "file events unavailable; polling the vault every {}s instead", poll.as_secs_f64());
            start(app, &tx, WatchMode::Poll(poll))
        }),
    }
    .map_err(|e| {
        tracing::error!(error = %e, "cannot watch the vault");
        KbError::external("watching the vault")
    })?;
    let app = Arc::clone(app);
    let control = tx.clone();
    let thread = std::thread::Builder::new()
        .name("stratum-watcher".into())
        .spawn(move || run(&app, &rx, &tx, watcher, mode))
        .map_err(|_| KbError::external("starting the watcher thread"))?;
    Ok(Some(VaultWatcher {
        control,
        thread: Some(thread),
    }))
}

/// Whether `path` is outside the notes: not in the vault, or under a dot-folder (.pkm, .git,
/// .obsidian), a dot-file (our temp files, vim's swap files) or the app's own folder.
fn ignored(app: &App, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(app.vault().root()) else {
        return true;
    };
    rel.components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        || app.dialect.in_app_folder(&rel.to_string_lossy())
}

fn classify(app: &App, path: &Path, kind: &EventKind) -> Option<Change> {
    if matches!(kind, EventKind::Access(_)) || ignored(app, path) {
        return None;
    }
    let rel = path.strip_prefix(app.vault().root()).ok()?;
    match VaultPath::from_abs(app.vault(), path) {
        Ok(p) => Some(Change::Note(p)),
        // A folder event (rename, removal) may move many notes at once.
        Err(_)
            if path.extension().is_none()
                || app
                    .root
                    .facts(&rel.to_string_lossy())
                    .is_ok_and(|f| f.kind == crate::beneath::Kind::Dir) =>
        {
            Some(Change::Rescan)
        }
        // Editors' backups and temp files (`note.md~`, `note.md.tmp`): not notes.
        Err(_) => None,
    }
}

/// One debounced burst: the notes it touched, and whether a rescan is needed.
struct Burst {
    notes: HashSet<VaultPath>,
    rescan: bool,
    /// Folders that appeared in the vault's own folder: watched before the rescan they cause.
    new_folders: Vec<std::path::PathBuf>,
    /// When the watcher took the burst's first event.
    first_seen: Instant,
    /// When the burst was complete (its quiet period over) and handed to the writer.
    handed: Instant,
}

impl Burst {
    /// Adds a changed note, unless the change is the echo of our own save; from here until the
    /// writer has applied the burst, the note counts as pending.
    fn add(&mut self, app: &App, note: VaultPath) {
        if !is_echo(app, &note) && !self.notes.contains(&note) {
            app.pending.note_seen(&note);
            self.notes.insert(note);
        }
    }
}

fn run(
    app: &Arc<App>,
    rx: &Receiver<Msg>,
    tx: &Sender<Msg>,
    mut _watcher: AnyWatcher,
    mode: WatchMode,
) {
    let mut polling = matches!(mode, WatchMode::Poll(_));
    loop {
        // Block until something happens: an idle vault costs no CPU.
        let Ok(first) = rx.recv() else { return };
        let now = Instant::now();
        let mut burst = Burst {
            notes: HashSet::new(),
            rescan: false,
            new_folders: Vec::new(),
            first_seen: now,
            handed: now,
        };
        let mut out_of_watches = false;
        let mut take = |msg: Msg, burst: &mut Burst| -> bool {
            match msg {
                Msg::Stop => return false,
                Msg::Event(Ok(ev)) => {
                    if ev.need_rescan() {
                        tracing::warn!(
                            "the watcher's event queue overflowed; rescanning the vault"
                        );
                        burst.rescan = true;
                    }
                    for p in &ev.paths {
                        if !matches!(ev.kind, EventKind::Access(_) | EventKind::Remove(_))
                            && new_top_folder(app, p)
                        {
                            burst.new_folders.push(p.clone());
                        }
                        match classify(app, p, &ev.kind) {
                            Some(Change::Note(n)) => burst.add(app, n),
                            Some(Change::Rescan) => burst.rescan = true,
                            None => {}
                        }
                    }
                }
                Msg::Event(Err(e)) => {
                    if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) {
                        out_of_watches = true;
                    } else if !e.paths.is_empty() && e.paths.iter().all(|p| ignored(app, p)) {
                        // A file of our own `.pkm/` (a socket or index file renamed while the
                        // poller walked) or another dot-folder: nothing a rescan would read.
                        tracing::debug!(error = %e, "watcher error outside the notes; ignored");
                        return true;
                    } else {
                        tracing::warn!(error = %e, "watcher error; rescanning the vault");
                    }
                    burst.rescan = true;
                }
            }
            true
        };
        if !take(first, &mut burst) {
            return;
        }
        loop {
            match rx.recv_timeout(DEBOUNCE) {
                Ok(msg) => {
                    if !take(msg, &mut burst) {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        // Before the rescan is queued: a note written in a new folder before its watch began is
        // found by the rescan, and one written after by the watch.
        for folder in std::mem::take(&mut burst.new_folders) {
            if let Err(e) = watch_folder(app, &mut _watcher, &folder) {
                if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) {
                    out_of_watches = true;
                } else {
                    tracing::warn!(error = %e, "cannot watch a new folder; rescanning the vault");
                }
                burst.rescan = true;
            }
        }
        if out_of_watches && !polling {
            let poll = match mode {
                WatchMode::Auto { poll } | WatchMode::Poll(poll) => poll,
                WatchMode::Off => DEFAULT_POLL_INTERVAL,
            };
            match start(app, tx, WatchMode::Poll(poll)) {
                Ok(w) => {
                    tracing::warn!(
                        "the OS's file-watch limit is reached (raise fs.inotify.max_user_watches); polling the vault every {}s instead",
                        poll.as_secs_f64()
                    );
                    _watcher = w;
                    polling = true;
                }
                Err(e) => tracing::error!(error = %e, "cannot poll the vault either"),
            }
        }
        if burst.rescan {
            app.pending.rescan_seen();
        }
        burst.handed = Instant::now();
        app.queue(move |app, writer| apply_burst(app, writer, burst));
    }
}

/// Applies one burst on the writer: the rescan first when asked, then the notes, in one update;
/// then the burst no longer counts as pending.
fn apply_burst(app: &App, writer: &mut Writer, burst: Burst) {
    if burst.rescan
        && let Err(e) = scan::scan_on_writer(app, writer, scan::ScanMode::Incremental)
    {
        tracing::warn!(error = %e, "rescan after a folder change failed");
    }
    let notes: Vec<VaultPath> = burst.notes.into_iter().collect();
    if !notes.is_empty() {
        match scan::sync_paths(app, writer, &notes) {
            // How long after the watcher had the burst (its quiet period of DEBOUNCE over) the
            // notes were searchable, and after its first event: scripts/bench/bench.py reads both.
            Ok(r) if r.updated + r.removed > 0 => tracing::info!(
                updated = r.updated,
                removed = r.removed,
                applied_ms = ms(burst.handed),
                since_first_event_ms = ms(burst.first_seen),
                "applied external changes"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, notes = notes.len(), "could not apply external changes")
            }
        }
    }
    app.pending.applied(&notes, burst.rescan);
}

/// Milliseconds since `t`, to a tenth.
fn ms(t: Instant) -> f64 {
    (t.elapsed().as_secs_f64() * 10_000.0).round() / 10.0
}

/// Whether the note's file is what the server itself last wrote there (the event is the echo of
/// our own save, recorded before the file changed). Another program's later edit is not.
fn is_echo(app: &App, note: &VaultPath) -> bool {
    let mut own = app.own_saves.lock();
    let Some(ours) = own.get(note.as_str()) else {
        return false;
    };
    let now = app
        .root
        .read_regular(note.as_str())
        .ok()
        .map(|(b, _)| sha256_hex(&b))
        .unwrap_or_default();
    if *ours == now {
        return true;
    }
    own.remove(note.as_str());
    false
}
