//! The write path under failure and contention: a failure injected at every step of a save or a
//! delete leaves the note as it was before or as it is after, never anything else, with the
//! store intact; a busy writer (a rebuild) turns writes away with VaultLocked while reads go on;
//! hooks fire.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pkm_core::{ErrorKind, Vault, VaultPath};
use stratum_app::commands::{page, search};
use stratum_app::scan::{self, ScanMode};
use stratum_app::write_path::Step;
use stratum_app::{App, AppConfig, SaveHooks};

fn open(root: &Path, config: AppConfig) -> Arc<App> {
    let app = App::open(Vault::open(root).unwrap(), config).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();
    app
}

fn integrity_ok(root: &Path) -> bool {
    let conn = rusqlite::Connection::open(root.join(".pkm/blocks.db")).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .unwrap()
        == "ok"
}

fn temp_files(root: &Path) -> Vec<String> {
    walkdir(root)
        .into_iter()
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

fn walkdir(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            if e.file_name() != ".pkm" {
                out.extend(walkdir(&e.path()));
            }
        } else {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// Fails the k-th step the injector is asked about; counts the steps (shared with `batch.rs`).
pub(crate) fn fail_at(app: &App, k: usize) -> Arc<AtomicUsize> {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    app.set_fault_injector(Some(Arc::new(move |step: Step| {
        if counter.fetch_add(1, Ordering::SeqCst) == k {
            Err(std::io::Error::other(format!(
                "injected failure at {step:?}"
            )))
        } else {
            Ok(())
        }
    })));
    seen
}

#[test]
fn a_failure_at_any_step_of_a_save_leaves_before_or_after() {
    let mut failures_seen = 0;
    for k in 0.. {
        let dir = tempfile::tempdir().unwrap();
        let app = open(dir.path(), AppConfig::default());
        let p = VaultPath::parse(app.vault(), "notes/n.md").unwrap();
        let before = page::save_page(&app, &p, "- before pelican", None).unwrap();
        let seen = fail_at(&app, k);
        let result = page::save_page(&app, &p, "- after flamingo", None);
        app.set_fault_injector(None);
        let steps = seen.load(Ordering::SeqCst);

        let on_disk = std::fs::read_to_string(dir.path().join("notes/n.md")).unwrap();
        let status = search::index_status(&app).unwrap();
        match &result {
            Ok(_) => {
                assert_eq!(on_disk, "- after flamingo", "k={k}");
                if status.index_fresh {
                    assert_eq!(
                        search::search_blocks(&app, "flamingo", 5, 0).unwrap().total,
                        1,
                        "k={k}"
                    );
                }
            }
            Err(e) => {
                failures_seen += 1;
                assert_eq!(e.kind, ErrorKind::External, "k={k}: {e:?}");
                assert_eq!(
                    on_disk, "- before pelican",
                    "k={k}: the previous note is intact"
                );
                let now = page::open_page(&app, &p).unwrap();
                assert_eq!(now.modified_at, before.modified_at, "k={k}");
                assert_eq!(
                    search::search_blocks(&app, "flamingo", 5, 0).unwrap().total,
                    0,
                    "k={k}"
                );
                assert_eq!(
                    search::search_blocks(&app, "pelican", 5, 0).unwrap().total,
                    1,
                    "k={k}"
                );
            }
        }
        assert!(integrity_ok(dir.path()), "k={k}");
        assert!(
            temp_files(dir.path()).is_empty(),
            "k={k}: {:?}",
            temp_files(dir.path())
        );
        // Whatever happened, a reindex brings everything into agreement with the file.
        scan::scan(&app, ScanMode::Incremental).unwrap();
        assert!(search::index_status(&app).unwrap().index_fresh, "k={k}");
        let word = if on_disk.contains("flamingo") {
            "flamingo"
        } else {
            "pelican"
        };
        assert_eq!(
            search::search_blocks(&app, word, 5, 0).unwrap().total,
            1,
            "k={k}"
        );
        if steps <= k {
            break; // the save completed without reaching step k: every step has been tried
        }
    }
    assert!(
        failures_seen >= 5,
        "the sweep reached the file and store steps ({failures_seen})"
    );
}

#[test]
fn a_failure_at_any_step_of_a_delete_leaves_before_or_after() {
    // In a folder of its own too: the delete removes the folders it empties, and their removal
    // is made durable before the store lets go of the note.
    for note in ["d.md", "deep/er/d.md"] {
        for k in 0.. {
            let dir = tempfile::tempdir().unwrap();
            let app = open(dir.path(), AppConfig::default());
            let p = VaultPath::parse(app.vault(), note).unwrap();
            page::save_page(&app, &p, "- doomed heron", None).unwrap();
            let seen = fail_at(&app, k);
            let result = page::delete_page(&app, &p, None);
            app.set_fault_injector(None);
            let exists = dir.path().join(note).exists();
            assert_eq!(exists, result.is_err(), "{note} k={k}: {result:?}");
            if exists {
                assert_eq!(
                    std::fs::read_to_string(dir.path().join(note)).unwrap(),
                    "- doomed heron"
                );
                assert!(page::open_page(&app, &p).is_ok());
                assert_eq!(
                    search::search_blocks(&app, "heron", 5, 0).unwrap().total,
                    1,
                    "{note} k={k}"
                );
            } else {
                assert!(!dir.path().join("deep").exists(), "{note} k={k}");
            }
            assert!(
                search::index_status(&app).unwrap().index_fresh,
                "{note} k={k}"
            );
            assert!(integrity_ok(dir.path()), "{note} k={k}");
            if seen.load(Ordering::SeqCst) <= k {
                break;
            }
        }
    }
}

#[test]
fn a_busy_writer_turns_writes_away_with_vault_locked_and_nothing_changed_while_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let app = open(
        dir.path(),
        AppConfig {
            write_budget: Duration::from_millis(100),
            ..AppConfig::default()
        },
    );
    let p = VaultPath::parse(app.vault(), "r.md").unwrap();
    let q = VaultPath::parse(app.vault(), "q.md").unwrap();
    page::save_page(&app, &p, "- readable ibis", None).unwrap();
    // A save that holds the writer (as a rebuild does) until the test lets it go.
    let (entered_tx, entered) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some((entered_tx, released)));
    app.set_fault_injector(Some(Arc::new(move |step: Step| {
        if step == Step::TempCreate
            && let Some((entered, released)) = gate.lock().unwrap().take()
        {
            entered.send(()).unwrap();
            released.recv().unwrap();
        }
        Ok(())
    })));
    let busy = {
        let (app, q) = (Arc::clone(&app), q.clone());
        std::thread::spawn(move || page::save_page(&app, &q, "- slow stork", None))
    };
    entered.recv().unwrap();

    let err = page::save_page(&app, &p, "- blocked", None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::VaultLocked);
    assert!(err.retry_after_seconds.unwrap_or(0) >= 1);
    assert_eq!(
        page::add_tag(&app, &p, "x").unwrap_err().kind,
        ErrorKind::VaultLocked
    );
    assert_eq!(
        page::open_page(&app, &p).unwrap().content,
        "- readable ibis"
    );
    assert_eq!(search::search_blocks(&app, "ibis", 5, 0).unwrap().total, 1);

    release.send(()).unwrap();
    busy.join().unwrap().unwrap();
    app.set_fault_injector(None);
    // The refused writes never ran, not even later.
    page::save_page(&app, &q, "- after stork", None).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("r.md")).unwrap(),
        "- readable ibis"
    );
    assert_eq!(
        search::search_blocks(&app, "blocked", 5, 0).unwrap().total,
        0
    );
    page::save_page(&app, &p, "- unblocked", None).unwrap();
}

#[test]
fn a_running_rebuild_means_not_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), AppConfig::default());
    let held = app
        .indexing_guard()
        .exclusive(Duration::from_secs(1))
        .unwrap();
    assert!(!search::index_status(&app).unwrap().index_fresh);
    drop(held);
    assert!(search::index_status(&app).unwrap().index_fresh);
}

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl SaveHooks for Recorder {
    fn on_save(&self, path: &str) {
        self.0.lock().unwrap().push(format!("save {path}"));
    }
    fn on_link(&self, path: &str, targets: &[String]) {
        self.0
            .lock()
            .unwrap()
            .push(format!("link {path} {}", targets.join(",")));
    }
    fn on_delete(&self, path: &str) {
        self.0.lock().unwrap().push(format!("delete {path}"));
    }
}

#[test]
fn hooks_fire_after_each_successful_write_only() {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), AppConfig::default());
    let rec = Arc::new(Recorder::default());
    app.add_hooks(rec.clone());
    let p = VaultPath::parse(app.vault(), "h.md").unwrap();
    let doc = page::save_page(&app, &p, "See [[B]] and [[A|alias]]", None).unwrap();
    assert!(page::save_page(&app, &p, "x", Some("2001-01-01T00:00:00Z")).is_err());
    page::add_tag(&app, &p, "t").unwrap();
    page::delete_page(&app, &p, None).unwrap();
    let log = rec.0.lock().unwrap().clone();
    assert_eq!(
        log,
        vec![
            "save h.md",
            "link h.md A,B",
            "save h.md",
            "link h.md A,B",
            "delete h.md"
        ],
        "{doc:?}"
    );
}

#[test]
fn a_second_app_on_the_same_vault_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path(), AppConfig::default());
    let second = App::open(Vault::open(dir.path()).unwrap(), AppConfig::default());
    let err = second.err().expect("the vault lock is held");
    assert!(
        err.message.contains("another stratum-mcp process")
            && err.message.contains("leads this vault"),
        "{}",
        err.message
    );
}

#[test]
fn dropping_the_last_handle_frees_the_vault_at_once() {
    // The writer answers a write only after it has let go of the app; otherwise the caller's
    // drop is not the last one and the next open races the writer for the vault's lead.
    let dir = tempfile::tempdir().unwrap();
    for i in 0..200 {
        let app = open(dir.path(), AppConfig::default());
        let p = VaultPath::parse(app.vault(), "n.md").unwrap();
        page::save_page(&app, &p, &format!("- round {i}\n"), None).unwrap();
        drop(app);
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("n.md")).unwrap(),
        "- round 199\n"
    );
}

/// Index commits are not synced (ADR-0024): a machine crash can take the last ones while the store
/// keeps their marks cleared. Reopened, the vault finds the index older than the store relied on,
/// rebuilds it, and answers as the files say.
#[test]
fn an_index_that_lost_its_last_commits_is_rebuilt_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let search = dir.path().join(".pkm/search");
    let stopped = dir.path().join("stopped-index");
    {
        let app = open(dir.path(), AppConfig::default());
        let p = VaultPath::parse(app.vault(), "a.md").unwrap();
        page::save_page(&app, &p, "- first aardvark\n", None).unwrap();
        // The index as the disk could hold it if the machine stopped now (nothing is writing).
        std::fs::create_dir_all(&stopped).unwrap();
        for entry in std::fs::read_dir(&search).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), stopped.join(entry.file_name())).unwrap();
        }
        for (name, text) in [
            ("b.md", "- second badger\n"),
            ("a.md", "- first anteater\n"),
        ] {
            let p = VaultPath::parse(app.vault(), name).unwrap();
            page::save_page(&app, &p, text, None).unwrap();
        }
    }
    std::fs::remove_dir_all(&search).unwrap();
    std::fs::rename(&stopped, &search).unwrap();

    let app = open(dir.path(), AppConfig::default());
    assert!(search::index_status(&app).unwrap().index_fresh);
    for (word, hits) in [("badger", 1), ("anteater", 1), ("aardvark", 0)] {
        assert_eq!(
            search::search_blocks(&app, word, 5, 0).unwrap().total,
            hits,
            "{word}"
        );
    }
}

#[test]
fn a_note_with_the_longest_name_a_file_may_have_is_saved_and_read_back() {
    // The save's temp file sits beside the note under a longer name; it must still fit.
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path(), AppConfig::default());
    for name in [
        format!("{}.md", "a".repeat(252)),
        // 84 three-byte characters: 255 bytes.
        format!("deep/{}.md", "東".repeat(84)),
    ] {
        assert_eq!(name.rsplit('/').next().unwrap().len(), 255);
        let p = VaultPath::parse(app.vault(), &name).unwrap();
        page::save_page(&app, &p, "- first\n", None).unwrap();
        let saved = page::save_page(&app, &p, "- second\n", None).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(&name)).unwrap(),
            "- second\n"
        );
        assert_eq!(
            page::open_page(&app, &p).unwrap().modified_at,
            saved.modified_at
        );
    }
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

/// The env var that makes the crash test's binary a child that aborts at a step of a save:
/// `<vault>\n<step>`.
const SAVE_CRASH_CHILD: &str = "STRATUM_SAVE_CRASH_CHILD";
const SAVE_ABORTING: &str = "save crash child: aborting at step";
const SAVE_CRASH_TEST: &str =
    "write_path::a_process_killed_at_any_step_of_a_save_is_found_as_the_file_says_once_reopened";

/// In the child: save a new version of the note, aborting the process (no unwinding, no
/// destructor: as a kill) when the save reaches step `k`.
fn save_crash_child(spec: &str) {
    let (root, k) = spec.split_once('\n').unwrap();
    let k: usize = k.parse().unwrap();
    let app = open(Path::new(root), AppConfig::default());
    let seen = Arc::new(AtomicUsize::new(0));
    app.set_fault_injector(Some(Arc::new(move |step: Step| {
        if seen.fetch_add(1, Ordering::SeqCst) == k {
            eprintln!("{SAVE_ABORTING} {k} ({step:?})");
            std::process::abort();
        }
        Ok(())
    })));
    let p = VaultPath::parse(app.vault(), "notes/n.md").unwrap();
    page::save_page(&app, &p, "- after flamingo", None).unwrap();
}

/// Killed at any step of a save (the file written, the store transaction that marks the note as
/// lagging with its rows, the index commit), the vault once reopened answers as its file says:
/// the store and the index hold the note the file holds, and the index is fresh.
#[test]
fn a_process_killed_at_any_step_of_a_save_is_found_as_the_file_says_once_reopened() {
    if let Ok(spec) = std::env::var(SAVE_CRASH_CHILD) {
        save_crash_child(&spec);
        return;
    }
    let mut outcomes = Vec::new();
    for k in 0.. {
        let dir = tempfile::tempdir().unwrap();
        {
            let app = open(dir.path(), AppConfig::default());
            let p = VaultPath::parse(app.vault(), "notes/n.md").unwrap();
            page::save_page(&app, &p, "- before pelican", None).unwrap();
        }
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                SAVE_CRASH_TEST,
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SAVE_CRASH_CHILD, format!("{}\n{k}", dir.path().display()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let aborted = stderr.contains(&format!("{SAVE_ABORTING} {k} "));
        assert!(
            aborted != out.status.success(),
            "child {k}: {:?}\n{stderr}",
            out.status
        );

        let app = open(dir.path(), AppConfig::default());
        let on_disk = std::fs::read_to_string(dir.path().join("notes/n.md")).unwrap();
        let (now, then) = if on_disk.contains("flamingo") {
            ("flamingo", "pelican")
        } else {
            assert_eq!(on_disk, "- before pelican", "k={k}");
            ("pelican", "flamingo")
        };
        assert!(search::index_status(&app).unwrap().index_fresh, "k={k}");
        assert_eq!(
            search::search_blocks(&app, now, 5, 0).unwrap().total,
            1,
            "k={k}"
        );
        assert_eq!(
            search::search_blocks(&app, then, 5, 0).unwrap().total,
            0,
            "k={k}"
        );
        let p = VaultPath::parse(app.vault(), "notes/n.md").unwrap();
        assert_eq!(page::open_page(&app, &p).unwrap().content, on_disk, "k={k}");
        assert!(integrity_ok(dir.path()), "k={k}");
        outcomes.push(now);
        if !aborted {
            break; // the save ran to its end without reaching step k: every step was tried
        }
    }
    // Killed before the rename, the note is as before; from the rename on, as after.
    assert!(outcomes.len() > 5, "{outcomes:?}");
    assert_eq!(outcomes.last(), Some(&"flamingo"));
}
