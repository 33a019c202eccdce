//! The vault scan: the first build and every incremental refresh of the store and the index
//! from the files, which are always the source of truth.
//!
//! Files are listed and compared with the store's fingerprints (mtime, size, then content hash);
//! changed ones are read and parsed on every core; the store and the index are then updated in
//! chunks under the write lock, re-checking each file so that a save that raced the scan is
//! never overwritten by the older text the scan read.

use std::collections::{HashMap, HashSet};
use std::time::{Instant, SystemTime};

use pkm_core::{KbError, KbResult, VaultPath};
use rayon::prelude::*;

use crate::app::App;
use crate::beneath::Kind;
use crate::convert::{Prepared, prepare};
use crate::pending::same_fingerprint;
use crate::writer::{Change, Writer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanMode {
    /// Refresh pages whose files changed; drop pages whose files are gone.
    Incremental,
    /// Re-read every file and rebuild the index from scratch, exclusively.
    Rebuild,
}

#[derive(Debug, Default, Clone)]
pub struct ScanReport {
    /// Markdown files found.
    pub scanned: usize,
    /// Pages (re)written to the store and index.
    pub updated: usize,
    /// Pages dropped because their file is gone.
    pub removed: usize,
    /// Files passed over, with the reason (unreadable, not UTF-8, a note format other than `.md`
    /// such as `.org`, a name that is not a valid note path, a FIFO, socket or device).
    pub skipped: Vec<(String, String)>,
}

/// Pages per store transaction and index batch. Small enough that the index thread starts soon
/// and has little left after the last store write (cold 1k-note index, medians of 21 runs in
/// turns: 250 ms at 512, 228 ms at 128; 10k: 2.06 s, 1.98 s).
const CHUNK: usize = 128;

struct FileFacts {
    path: VaultPath,
    mtime: SystemTime,
    size: u64,
}

/// The version of the rules that turn a note into records; bump it when they change what a
/// stored note holds, so that vaults indexed before are read again in full once.
/// 3: a byte-order mark no longer hides a Logseq page's properties.
const PARSE_RULES: u32 = 3;

/// Why a note-like file that is not read as a note is passed over, by its extension (any case);
/// `None` for files that are not notes at all (images, PDFs, `.canvas`…), left out silently.
fn unsupported_note_format(ext: &str) -> Option<&'static str> {
    let ext = ext.to_ascii_lowercase();
    match ext.as_str() {
        "org" => Some("org-mode files are not supported"),
        "markdown" | "mdown" | "mkd" | "mkdn" | "mdwn" | "mdx" => {
            Some("only markdown files ending in .md are read as notes")
        }
        _ => None,
    }
}

/// The vault's note files, and the note-like files passed over, with the reason (`.org`, other
/// markdown extensions, a `.md` whose name is not a valid note path, a FIFO, socket or device).
/// Listed beneath the vault's handle: a folder swapped for a symlink is never entered.
fn list_files(app: &App) -> (Vec<FileFacts>, Vec<(String, String)>) {
    let root = app.vault.root();
    let mut passed_over = Vec::new();
    let listed = app.root.list(|rel| {
        let dot_folder = rel
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        !(dot_folder || app.dialect.in_app_folder(&rel.to_string_lossy()))
    });
    let files = listed
        .into_iter()
        // Regular files, and FIFOs, sockets and devices (passed over below, never opened).
        .filter(|e| e.facts.kind != Kind::Symlink)
        .filter(|e| {
            // A temp file left by a process that died mid-save: this process holds the vault
            // lock, so nobody is writing it any more.
            let name = e
                .rel
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            if e.facts.kind == Kind::File && crate::write_path::is_temp_name(&name) {
                if let Err(err) = app.root.remove_file(&crate::beneath::shown(&e.rel)) {
                    tracing::warn!(error = %err, "cannot remove a stale temp file");
                }
                return false;
            }
            !name.starts_with('.')
        })
        .filter_map(|e| {
            let path = match VaultPath::from_abs(&app.vault, &root.join(&e.rel)) {
                Ok(path) => path,
                Err(err) => {
                    let ext = e.rel.extension().map(|x| x.to_string_lossy());
                    let why = match ext.as_deref() {
                        Some(x) if x.eq_ignore_ascii_case("md") => {
                            Some(format!("not a valid note path: {err}"))
                        }
                        Some(x) => unsupported_note_format(x).map(str::to_owned),
                        None => None,
                    };
                    if let Some(why) = why {
                        let rel = crate::beneath::shown(&e.rel);
                        tracing::debug!(path = %rel, reason = %why, "passing over a file");
                        passed_over.push((rel, why));
                    }
                    return None;
                }
            };
            if let Some(kind) = e.facts.kind.special() {
                let why = format!("{} ({kind})", crate::read_failure::NOT_REGULAR);
                tracing::debug!(note = %path, reason = %why, "passing over a file");
                passed_over.push((path.as_str().to_owned(), why));
                return None;
            }
            Some(FileFacts {
                path,
                mtime: e.facts.mtime?,
                size: e.facts.size,
            })
        })
        .collect();
    (files, passed_over)
}

enum Read {
    Ready(Box<Prepared>),
    Skipped(String),
}

fn read_and_prepare(app: &App, f: &FileFacts) -> Read {
    match app.root.read_regular(f.path.as_str()) {
        Err(e) => Read::Skipped(e.reason()),
        Ok((bytes, _)) => match String::from_utf8(bytes) {
            Err(_) => Read::Skipped("not valid UTF-8".into()),
            Ok(text) => Read::Ready(Box::new(prepare(
                &app.dialect,
                &f.path,
                &text,
                f.mtime,
                f.size,
            ))),
        },
    }
}

/// Called with `(done, total)` as a scan reads files.
pub type Progress = std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>;

/// Scans the vault on its writer (after the updates queued before it) and waits for the report.
pub fn scan(app: &App, mode: ScanMode) -> KbResult<ScanReport> {
    scan_with_progress(app, mode, std::sync::Arc::new(|_, _| {}))
}

/// [`scan`], calling `progress(done, total)` as files are read (once per [`CHUNK`] of them).
pub fn scan_with_progress(app: &App, mode: ScanMode, progress: Progress) -> KbResult<ScanReport> {
    app.on_writer(None, move |app, writer| {
        run_scan(app, writer, mode, &*progress)
    })
}

impl App {
    /// Queues the first incremental scan on the writer; index-backed reads wait for it (up to
    /// `warm_wait`) while `initialize` and single-note reads answer at once.
    pub fn warm_up(&self) {
        self.queue(|app, writer| {
            match scan_on_writer(app, writer, ScanMode::Incremental) {
                Ok(report) => tracing::info!(
                    scanned = report.scanned,
                    updated = report.updated,
                    removed = report.removed,
                    skipped = report.skipped.len(),
                    "vault scan finished"
                ),
                Err(e) => tracing::error!(error = %e, "vault scan failed"),
            }
            app.mark_ready();
        });
    }
}

/// [`scan`] from a job already on the writer (the first scan, a watcher's rescan).
pub(crate) fn scan_on_writer(
    app: &App,
    writer: &mut Writer,
    mode: ScanMode,
) -> KbResult<ScanReport> {
    run_scan(app, writer, mode, &|_, _| {})
}

/// The scan itself, on the writer thread: nothing else writes the store or the index meanwhile.
fn run_scan(
    app: &App,
    writer: &mut Writer,
    mode: ScanMode,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> KbResult<ScanReport> {
    // Notes read under other parsing rules (an older server, or another dialect since the vault
    // was indexed) are all read again: their titles, links and tags may differ now.
    let rules = format!("{PARSE_RULES} {:?}", app.dialect);
    let stored_rules = app.store.get_meta("parse_rules").map_err(KbError::from)?;
    let mode = if stored_rules.as_deref() != Some(rules.as_str())
        && app.store.page_count().map_err(KbError::from)? > 0
    {
        tracing::info!("the notes were read under other parsing rules; reading them again");
        ScanMode::Rebuild
    } else {
        mode
    };
    // A rebuild, and the first scan after start (which builds the store of a new vault), write
    // the store in one transaction and show as rebuilding (`index_fresh` false).
    let bulk = mode == ScanMode::Rebuild || !app.is_ready();
    let _rebuilding = if bulk {
        Some(
            app.guard
                .exclusive(app.config.write_budget)
                .ok_or_else(|| KbError::locked(5))?,
        )
    } else {
        None
    };
    let (files, passed_over) = list_files(app);
    let known = app.store.fingerprints().map_err(KbError::from)?;
    let lagging: HashSet<String> = app
        .store
        .index_lag()
        .map_err(KbError::from)?
        .into_iter()
        .collect();
    let mut report = update(
        app,
        writer,
        &Scope {
            files,
            known,
            lagging,
            mode,
            bulk,
            what: Some(match mode {
                ScanMode::Rebuild => "index rebuild",
                ScanMode::Incremental => "index update",
            }),
        },
        progress,
    )?;
    report.skipped.extend(passed_over);
    app.pages_changed();
    if stored_rules.as_deref() != Some(rules.as_str()) {
        writer.set_meta("parse_rules", &rules)?;
    }
    Ok(report)
}

/// Brings the store and the index up to date with the files of `paths` (dropping the notes whose
/// files are gone), in one update: one store transaction and one index commit for all of them.
/// On the writer thread (the watcher's bursts, stale reads).
pub(crate) fn sync_paths(
    app: &App,
    writer: &mut Writer,
    paths: &[VaultPath],
) -> KbResult<ScanReport> {
    let mut files = Vec::with_capacity(paths.len());
    let mut known = HashMap::new();
    for path in paths {
        if let Some(row) = app.store.get_page(path).map_err(KbError::from)? {
            known.insert(row.path, (row.mtime_ns, row.size, row.hash));
        }
        if let Ok(facts) = app.root.facts(path.as_str())
            && facts.kind == Kind::File
            && let Some(mtime) = facts.mtime
        {
            files.push(FileFacts {
                path: path.clone(),
                mtime,
                size: facts.size,
            });
        }
    }
    let wanted: HashSet<&str> = paths.iter().map(VaultPath::as_str).collect();
    let lagging: HashSet<String> = app
        .store
        .index_lag()
        .map_err(KbError::from)?
        .into_iter()
        .filter(|p| wanted.contains(p.as_str()))
        .collect();
    let report = update(
        app,
        writer,
        &Scope {
            files,
            known,
            lagging,
            mode: ScanMode::Incremental,
            bulk: false,
            what: None,
        },
        &|_, _| {},
    )?;
    if report.updated + report.removed > 0 {
        app.pages_changed();
    }
    Ok(report)
}

/// What one update covers.
struct Scope {
    /// The note files to consider, as listed.
    files: Vec<FileFacts>,
    /// The store's fingerprints of the notes considered (path → mtime, size, hash).
    known: HashMap<String, (i64, u64, String)>,
    /// Considered notes marked as lagging the index.
    lagging: HashSet<String>,
    mode: ScanMode,
    /// Write the store in one transaction (a rebuild, the first scan).
    bulk: bool,
    /// The name of the update in milestone logs; `None` logs none (small syncs).
    what: Option<&'static str>,
}

/// What an update does with its scope.
struct Plan<'a> {
    /// The files to read: their fingerprint moved, or they lag the index, or a rebuild reads all.
    read: Vec<&'a FileFacts>,
    /// The notes the store knows whose files are gone.
    gone: Vec<String>,
    /// The notes that leave the store and the index: `gone`, and lagging notes whose files are gone.
    dropped: Vec<String>,
}

impl Scope {
    fn plan(&self) -> Plan<'_> {
        let on_disk: HashSet<&str> = self.files.iter().map(|f| f.path.as_str()).collect();
        let gone: Vec<String> = self
            .known
            .keys()
            .filter(|p| !on_disk.contains(p.as_str()))
            .cloned()
            .collect();
        let mut dropped = gone.clone();
        dropped.extend(
            self.lagging
                .iter()
                .filter(|p| !on_disk.contains(p.as_str()))
                .cloned(),
        );
        let read = self
            .files
            .iter()
            .filter(|f| {
                self.mode == ScanMode::Rebuild
                    || self.lagging.contains(f.path.as_str())
                    || self
                        .known
                        .get(f.path.as_str())
                        .is_none_or(|(mtime, size, _)| {
                            !same_fingerprint((*mtime, *size), f.mtime, f.size)
                        })
            })
            .collect();
        Plan {
            read,
            gone,
            dropped,
        }
    }
}

/// The update of the store and the index for `scope`, as one [`Change`]: files whose fingerprint
/// moved (or that lag, or every file on a rebuild) are read, parsed and written, notes known to
/// the store whose files are gone are dropped, and the index is committed once. Until that commit,
/// searches see the previous index (a rebuild never shows a half-empty one); a failure on the way
/// leaves it there.
fn update(
    app: &App,
    writer: &mut Writer,
    scope: &Scope,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> KbResult<ScanReport> {
    let Plan {
        read,
        gone,
        dropped,
    } = scope.plan();
    let mut report = ScanReport {
        scanned: scope.files.len(),
        ..Default::default()
    };
    let read_paths: Vec<&str> = read.iter().map(|f| f.path.as_str()).collect();
    let mut milestones = Milestones::start(scope.what, read.len());
    std::thread::scope(|threads| {
        // The files are read from here on, while the writer sets its change up (the marks, and a
        // bulk load's dropped indexes): on a new 10k-note vault those were ~15 ms of the writer
        // alone before the first note was read.
        let prepared = read_ahead(threads, app, &read, progress);
        let mut change = if scope.bulk {
            let mut change = writer.change(&read_paths)?;
            // A bulk load when at least half the store is written (a rebuild, a new vault).
            change.in_one_transaction(read.len() * 2 >= scope.known.len())?;
            change
        } else {
            // The marks, the rows and the removals in one store transaction, committed with the
            // index (`Change::finish`): a crash before the store's commit leaves files that
            // differ from their rows (or rows without a file), which the next scan finds by
            // itself, whether or not the index committed. One transaction instead of three for
            // the watcher's note.
            let mut change = writer.change(&[])?;
            change.in_one_transaction(false)?;
            change.mark(&read_paths)?;
            change
        };
        if scope.mode == ScanMode::Rebuild {
            change.clear_index()?;
        }
        let (mut applied, mut updated) = (0, 0);
        for prepared in &prepared {
            applied += prepared.len();
            updated += apply_chunk(app, &mut change, prepared, scope, &mut report.skipped)?;
            milestones.progress(applied);
        }
        report.updated = updated;
        if read.is_empty() && dropped.is_empty() && scope.mode != ScanMode::Rebuild {
            drop(change); // nothing to commit
        } else {
            let dropped_paths: Vec<&str> = dropped.iter().map(String::as_str).collect();
            change.mark(&dropped_paths)?;
            change.remove(&dropped)?;
            report.removed = gone.len();
            change.finish()?;
        }
        Ok::<_, KbError>(())
    })?;
    writer.set_meta("last_indexed_at", &pkm_core::time::now_rfc3339())?;
    milestones.finished(&report);
    Ok(report)
}

/// Reads and parses `files` on every core, on a thread of `threads`, a chunk ahead of the writer
/// that takes them from the channel returned, in order. A writer that stops on an error drops the
/// channel, and the reading stops after the chunk in hand.
fn read_ahead<'scope, 'env>(
    threads: &'scope std::thread::Scope<'scope, 'env>,
    app: &'env App,
    files: &'env [&'env FileFacts],
    progress: &'env (dyn Fn(usize, usize) + Send + Sync),
) -> std::sync::mpsc::Receiver<Vec<(&'env FileFacts, Read)>> {
    let total = files.len();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(&FileFacts, Read)>>(1);
    threads.spawn(move || {
        let mut done = 0;
        for chunk in files.chunks(CHUNK) {
            let prepared: Vec<(&FileFacts, Read)> = chunk
                .par_iter()
                .map(|f| (*f, read_and_prepare(app, f)))
                .collect();
            // Once a chunk: the callback may wake another thread (the command line's progress
            // bar), and once a note that was ~10k wake-ups a 10k-note scan.
            done += prepared.len();
            progress(done, total);
            if tx.send(prepared).is_err() {
                break; // the writer stopped on an error
            }
        }
    });
    rx
}

/// The milestone logs of one update: started, each quarter done, finished.
struct Milestones {
    /// The update's name; `None` when it logs none (small syncs, or nothing to read).
    what: Option<&'static str>,
    total: usize,
    next_quarter: usize,
    started: Instant,
}

impl Milestones {
    fn start(what: Option<&'static str>, total: usize) -> Milestones {
        let what = what.filter(|_| total > 0);
        if let Some(what) = what {
            tracing::info!(target: crate::MILESTONE, notes = total, "{what} started");
        }
        Milestones {
            what,
            total,
            next_quarter: 1,
            started: Instant::now(),
        }
    }

    fn progress(&mut self, applied: usize) {
        if let Some(what) = self.what
            && applied < self.total
            && applied * 4 >= self.next_quarter * self.total
        {
            self.next_quarter = applied * 4 / self.total + 1;
            tracing::info!(target: crate::MILESTONE, done = applied, notes = self.total, "{what} {}% done", applied * 100 / self.total);
        }
    }

    fn finished(&self, report: &ScanReport) {
        if let Some(what) = self.what {
            tracing::info!(
                target: crate::MILESTONE,
                notes = report.updated,
                skipped = report.skipped.len(),
                elapsed_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                "{what} finished"
            );
        }
    }
}

/// Writes one chunk to the store and the index (uncommitted; the scan commits once). Runs on the
/// writer. A file whose mtime or size moved since it was read is read again here, so that the
/// store never goes back to an older text.
fn apply_chunk(
    app: &App,
    change: &mut Change<'_>,
    prepared: Vec<(&FileFacts, Read)>,
    scope: &Scope,
    skipped: &mut Vec<(String, String)>,
) -> KbResult<usize> {
    let mut batch: Vec<Prepared> = Vec::with_capacity(prepared.len());
    for (facts, read) in prepared {
        let now = app.root.facts(facts.path.as_str()).ok();
        let moved = now
            .as_ref()
            .is_some_and(|m| m.size != facts.size || m.mtime != Some(facts.mtime));
        let read = if moved {
            match now.and_then(|m| m.mtime.map(|t| (t, m.size))) {
                Some((mtime, size)) => read_and_prepare(
                    app,
                    &FileFacts {
                        mtime,
                        size,
                        path: facts.path.clone(),
                    },
                ),
                None => continue,
            }
        } else {
            read
        };
        match read {
            Read::Skipped(why) => {
                tracing::warn!(path = %facts.path, reason = %why, "skipping note");
                skipped.push((facts.path.to_string(), why));
            }
            Read::Ready(p) => {
                // Same text, new mtime (a touch): refresh the fingerprint in the store only.
                let same_text = scope
                    .known
                    .get(facts.path.as_str())
                    .is_some_and(|(_, _, h)| *h == p.record.hash);
                if same_text
                    && scope.mode == ScanMode::Incremental
                    && !scope.lagging.contains(facts.path.as_str())
                {
                    change.save(&[&*p])?;
                } else {
                    batch.push(*p);
                }
            }
        }
    }
    if batch.is_empty() {
        return Ok(0);
    }
    let pages: Vec<&Prepared> = batch.iter().collect();
    let ids = change.save(&pages)?;
    let updated = batch.len();
    let docs: Vec<_> = batch
        .into_iter()
        .zip(ids)
        .map(|(p, ids)| p.into_index_doc(ids))
        .collect();
    // The index holds no doc of a note the store did not know and that was not lagging (docs
    // leave the index before their lag mark does), nor of any note after a rebuild's clear.
    change.index_docs(&docs, &|path| {
        scope.mode != ScanMode::Rebuild
            && (scope.known.contains_key(path) || scope.lagging.contains(path))
    })?;
    Ok(updated)
}
