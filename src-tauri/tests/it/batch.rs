//! Changes of several notes at once (`batch.rs`, ADR-0020): a move of a note with many inbound
//! links rewritten is applied all or none; Conflict changes nothing; a moved note keeps its block
//! ids; a failure at any step leaves the vault before (or, past the store's commit, after); and
//! a process killed at any step leaves a vault that the next open brings entirely before or
//! entirely after, with the store agreeing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pkm_core::{ErrorKind, Vault, VaultPath};
use stratum_app::batch::FileChange;
use stratum_app::commands::{graph, page, search};
use stratum_app::scan::{self, ScanMode};
use stratum_app::write_path::Step;
use stratum_app::{App, AppConfig, SaveHooks};

use crate::write_path::fail_at;

/// Notes that link to the moved note.
const LINKERS: usize = 30;
const FROM: &str = "topics/target.md";
const TO: &str = "archive/moved.md";

fn open(root: &Path) -> Arc<App> {
    let app = App::open(Vault::open(root).unwrap(), AppConfig::default()).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();
    app
}

fn vp(app: &App, p: &str) -> VaultPath {
    VaultPath::parse(app.vault(), p).unwrap()
}

/// A vault with `topics/target.md`, `LINKERS` notes linking to it twice, an unrelated note, and
/// `refs.md` referring to the target's first block by its id (known only to the store); opened,
/// scanned and closed again. Returns that block's id.
fn make_vault(root: &Path) -> String {
    let write = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(FROM, "- alpha pelican block\n- second flamingo block\n");
    for i in 0..LINKERS {
        write(
            &format!("notes/n{i:02}.md"),
            &format!("- see [[target]] number {i}\n- and again [[target|the target]]\n"),
        );
    }
    write("other/keep.md", "- unrelated walrus\n");
    let app = open(root);
    let id = pelican_block(&app).0;
    page::save_page(
        &app,
        &vp(&app, "refs.md"),
        &format!("- see (({id}))\n"),
        None,
    )
    .unwrap();
    id
}

/// The id and the note of the block holding "pelican".
fn pelican_block(app: &App) -> (String, String) {
    let hits = search::search_blocks(app, "pelican", 10, 0)
        .unwrap()
        .results;
    assert_eq!(hits.len(), 1, "{hits:?}");
    (hits[0].block_id.clone(), hits[0].page_path.clone())
}

/// The move as a planner would make it from the files: the target moved, every link to it
/// rewritten.
fn plan(root: &Path, vault: &Vault) -> Vec<FileChange> {
    let p = |s: &str| VaultPath::parse(vault, s).unwrap();
    let target = std::fs::read(root.join(FROM)).unwrap();
    let mut changes = vec![FileChange::Move {
        from: p(FROM),
        to: p(TO),
        text: String::from_utf8(target.clone()).unwrap(),
        before: target,
    }];
    for i in 0..LINKERS {
        let path = format!("notes/n{i:02}.md");
        let before = std::fs::read(root.join(&path)).unwrap();
        let text = String::from_utf8(before.clone())
            .unwrap()
            .replace("[[target", "[[moved");
        changes.push(FileChange::Write {
            path: p(&path),
            before,
            text,
        });
    }
    changes
}

/// Every file (with its bytes) and folder (`None`) of the vault but `.pkm/`.
type Snapshot = BTreeMap<String, Option<Vec<u8>>>;

fn snapshot(root: &Path) -> Snapshot {
    fn walk(dir: &Path, rel: &str, out: &mut Snapshot) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            if rel.is_empty() && name == ".pkm" {
                continue;
            }
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().unwrap().is_dir() {
                out.insert(r.clone(), None);
                walk(&e.path(), &r, out);
            } else {
                out.insert(r, Some(std::fs::read(e.path()).unwrap()));
            }
        }
    }
    let mut out = Snapshot::new();
    walk(root, "", &mut out);
    out
}

/// `before` with `changes` applied, written out by hand: the folders are those holding files.
fn expected_after(before: &Snapshot, changes: &[FileChange]) -> Snapshot {
    let mut files: BTreeMap<String, Vec<u8>> = before
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect();
    for c in changes {
        match c {
            FileChange::Write { path, text, .. } => {
                files.insert(path.as_str().to_owned(), text.clone().into_bytes());
            }
            FileChange::Move { from, to, text, .. } => {
                files.remove(from.as_str());
                files.insert(to.as_str().to_owned(), text.clone().into_bytes());
            }
        }
    }
    let mut out = Snapshot::new();
    for (k, v) in files {
        let mut dir = k.as_str();
        while let Some((up, _)) = dir.rsplit_once('/') {
            out.insert(up.to_owned(), None);
            dir = up;
        }
        out.insert(k, Some(v));
    }
    out
}

fn diff(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| k.to_string())
        .collect()
}

/// Which of the two states the vault is in; panics, naming the files that differ, if neither.
fn before_or_after(root: &Path, before: &Snapshot, after: &Snapshot) -> bool {
    let now = snapshot(root);
    if now == *before {
        return false;
    }
    assert!(
        now == *after,
        "the vault is neither before nor after: differs from before at {:?}, from after at {:?}",
        diff(&now, before),
        diff(&now, after)
    );
    true
}

/// The store agrees with the vault being before or after: the moved note's backlinks (every
/// rewritten link and the block reference) at its path, none at the other; its block keeps its
/// id; search finds it there.
fn store_agrees(app: &App, block_id: &str, moved: bool) {
    let (here, there) = if moved { (TO, FROM) } else { (FROM, TO) };
    let links = search::get_page_backlinks(app, &vp(app, here), false)
        .unwrap()
        .backlinks;
    let mut sources: Vec<String> = links.into_iter().map(|b| b.source_page).collect();
    sources.sort();
    sources.dedup();
    let mut expected: Vec<String> = (0..LINKERS).map(|i| format!("notes/n{i:02}.md")).collect();
    expected.push("refs.md".into());
    assert_eq!(sources, expected, "backlinks of {here}");
    let err = search::get_page_backlinks(app, &vp(app, there), false).unwrap_err();
    assert_eq!(
        err.kind,
        ErrorKind::NotFound,
        "{there} is gone from the store"
    );
    assert_eq!(
        pelican_block(app),
        (block_id.to_owned(), here.to_owned()),
        "the block keeps its id"
    );
    let resolved = graph::resolve_link_target(app, &format!("(({block_id}))")).unwrap();
    assert_eq!(resolved.resolved.map(|r| r.path), Some(here.to_owned()));
}

fn journal_left(root: &Path) -> bool {
    root.join(".pkm/change.journal").exists()
}

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl SaveHooks for Recorder {
    fn on_save(&self, path: &str) {
        self.0.lock().unwrap().push(format!("save {path}"));
    }
    fn on_link(&self, _: &str, _: &[String]) {}
    fn on_delete(&self, path: &str) {
        self.0.lock().unwrap().push(format!("delete {path}"));
    }
}

#[test]
fn a_move_with_many_inbound_links_is_applied_whole() {
    let dir = tempfile::tempdir().unwrap();
    let id = make_vault(dir.path());
    let before = snapshot(dir.path());
    let app = open(dir.path());
    store_agrees(&app, &id, false);
    let hooks = Arc::new(Recorder::default());
    app.add_hooks(hooks.clone());
    let changes = plan(dir.path(), app.vault());
    let after = expected_after(&before, &changes);
    assert!(!after.contains_key("topics"), "the emptied folder goes");
    app.apply_file_changes(changes).unwrap();
    assert_eq!(snapshot(dir.path()), after);
    assert!(!journal_left(dir.path()));
    // Current when the call returns: no scan in between.
    store_agrees(&app, &id, true);
    let log = hooks.0.lock().unwrap().clone();
    assert_eq!(
        log.first().map(String::as_str),
        Some("delete topics/target.md")
    );
    assert!(log.contains(&format!("save {TO}")) && log.contains(&"save notes/n29.md".to_owned()));
    assert_eq!(log.len(), 2 + LINKERS, "{log:?}");
    // A scan finds nothing to do, and a reopened vault is the same.
    let report = scan::scan(&app, ScanMode::Incremental).unwrap();
    assert_eq!((report.updated, report.removed), (0, 0));
    drop(app);
    let app = open(dir.path());
    store_agrees(&app, &id, true);
}

#[test]
fn a_file_changed_after_planning_or_an_existing_target_is_a_conflict_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let id = make_vault(dir.path());
    let app = open(dir.path());
    let changes = plan(dir.path(), app.vault());
    // A person edits one of the linking notes after the plan read it.
    std::fs::write(
        dir.path().join("notes/n17.md"),
        "- edited by hand [[target]]\n",
    )
    .unwrap();
    let before = snapshot(dir.path());
    let err = app.apply_file_changes(changes).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    assert_eq!(err.note_path.as_deref(), Some("notes/n17.md"));
    assert_eq!(snapshot(dir.path()), before);
    assert!(!journal_left(dir.path()));

    // The target exists.
    let changes = plan(dir.path(), app.vault());
    std::fs::create_dir_all(dir.path().join("archive")).unwrap();
    std::fs::write(dir.path().join(TO), "- already here\n").unwrap();
    let before = snapshot(dir.path());
    let err = app.apply_file_changes(changes).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    assert_eq!(err.note_path.as_deref(), Some(TO));
    assert_eq!(snapshot(dir.path()), before);
    std::fs::remove_file(dir.path().join(TO)).unwrap();
    std::fs::remove_dir(dir.path().join("archive")).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    let links = search::get_page_backlinks(&app, &vp(&app, FROM), false).unwrap();
    assert_eq!(
        links.backlinks.len(),
        2 * LINKERS + 1 - 1,
        "n17 links once now"
    );
    assert_eq!(pelican_block(&app).0, id);

    // A path named twice is refused before anything changes; an empty change does nothing.
    let p = vp(&app, "other/keep.md");
    let twice = vec![
        FileChange::Write {
            path: p.clone(),
            before: b"- unrelated walrus\n".to_vec(),
            text: "a".into(),
        },
        FileChange::Write {
            path: p,
            before: b"- unrelated walrus\n".to_vec(),
            text: "b".into(),
        },
    ];
    let before = snapshot(dir.path());
    assert_eq!(
        app.apply_file_changes(twice).unwrap_err().kind,
        ErrorKind::InvalidArgs
    );
    app.apply_file_changes(Vec::new()).unwrap();
    assert_eq!(snapshot(dir.path()), before);

    // A note deleted after planning is a conflict too.
    let changes = plan(dir.path(), app.vault());
    std::fs::remove_file(dir.path().join("notes/n05.md")).unwrap();
    let before = snapshot(dir.path());
    let err = app.apply_file_changes(changes).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    assert_eq!(err.note_path.as_deref(), Some("notes/n05.md"));
    assert_eq!(snapshot(dir.path()), before);
    std::fs::write(dir.path().join("notes/n05.md"), "- back\n").unwrap();
    let before = snapshot(dir.path());

    // A new text whose frontmatter is not YAML refuses the whole change.
    let mut changes = plan(dir.path(), app.vault());
    if let Some(FileChange::Write { text, .. }) = changes.last_mut() {
        *text = "---\nkey: [unclosed\n---\n- body\n".into();
    }
    let err = app.apply_file_changes(changes).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgs, "{err:?}");
    assert_eq!(err.note_path.as_deref(), Some("notes/n29.md"));
    assert_eq!(snapshot(dir.path()), before);
    assert!(!journal_left(dir.path()));
}

/// Fails every step from the k-th on (the steps that would undo the change too).
fn fail_from(app: &App, k: usize) {
    let seen = AtomicUsize::new(0);
    app.set_fault_injector(Some(Arc::new(move |step: Step| {
        if seen.fetch_add(1, Ordering::SeqCst) >= k {
            Err(std::io::Error::other(format!(
                "injected failure at {step:?}"
            )))
        } else {
            Ok(())
        }
    })));
}

fn copy_all(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_all(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_failure_at_any_step_of_a_move_leaves_the_vault_before_or_after() {
    let base = tempfile::tempdir().unwrap();
    let id = make_vault(base.path());
    let before = snapshot(base.path());
    let mut steps_failed = Vec::new();
    for k in 0.. {
        let dir = tempfile::tempdir().unwrap();
        copy_all(base.path(), dir.path());
        let app = open(dir.path());
        let changes = plan(dir.path(), app.vault());
        let after = expected_after(&before, &changes);
        let seen = fail_at(&app, k);
        let result = app.apply_file_changes(changes);
        app.set_fault_injector(None);
        if seen.load(Ordering::SeqCst) <= k {
            // Past the last step: nothing failed.
            assert!(result.is_ok(), "{result:?}");
            assert!(before_or_after(dir.path(), &before, &after));
            break;
        }
        let moved = before_or_after(dir.path(), &before, &after);
        match &result {
            Err(e) => {
                assert!(!moved, "step {k}: an error, yet the vault changed: {e:?}");
                steps_failed.push(k);
            }
            // Past the store's commit the change is done (the index lags until the next scan,
            // or the journal waits for the next change).
            Ok(()) => {
                assert!(moved, "step {k}");
                scan::scan(&app, ScanMode::Incremental).unwrap();
            }
        }
        store_agrees(&app, &id, moved);
        drop(app);
        let app = open(dir.path());
        assert!(
            !journal_left(dir.path()),
            "step {k}: the journal is gone once reopened"
        );
        assert_eq!(before_or_after(dir.path(), &before, &after), moved);
        store_agrees(&app, &id, moved);
    }
    // The journal, 31 files' five steps each, the removal, the store: all answered an error.
    assert!(steps_failed.len() > 5 * (LINKERS + 1), "{steps_failed:?}");
}

/// The env var that makes the crash test's binary a child that aborts at a step:
/// `<vault>\n<step>`.
const CRASH_CHILD: &str = "STRATUM_BATCH_CRASH_CHILD";
const ABORTING: &str = "crash child: aborting at step";
/// The test whose binary, re-run with [`CRASH_CHILD`] set, is the child.
const CRASH_TEST: &str =
    "batch::a_process_killed_at_any_step_of_a_move_leaves_the_vault_before_or_after_once_reopened";

/// In the child: open the prepared vault, plan the move, and abort the process when the write
/// path reaches step `k` (no unwinding, no destructor: as a kill).
fn crash_child(spec: &str) {
    let (root, k) = spec.split_once('\n').unwrap();
    let k: usize = k.parse().unwrap();
    let root = Path::new(root);
    let app = open(root);
    let seen = Arc::new(AtomicUsize::new(0));
    app.set_fault_injector(Some(Arc::new(move |step: Step| {
        if seen.fetch_add(1, Ordering::SeqCst) == k {
            eprintln!("{ABORTING} {k} ({step:?})");
            std::process::abort();
        }
        Ok(())
    })));
    app.apply_file_changes(plan(root, app.vault())).unwrap();
}

#[test]
fn a_process_killed_at_any_step_of_a_move_leaves_the_vault_before_or_after_once_reopened() {
    if let Ok(spec) = std::env::var(CRASH_CHILD) {
        crash_child(&spec);
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let id = make_vault(base.path());
    let before = snapshot(base.path());
    let after = expected_after(
        &before,
        &plan(base.path(), &Vault::open(base.path()).unwrap()),
    );

    // The steps of the move, counted in this process on a copy (it completes).
    let steps = {
        let dir = tempfile::tempdir().unwrap();
        copy_all(base.path(), dir.path());
        let app = open(dir.path());
        let seen = fail_at(&app, usize::MAX);
        app.apply_file_changes(plan(dir.path(), app.vault()))
            .unwrap();
        assert!(before_or_after(dir.path(), &before, &after));
        seen.load(Ordering::SeqCst)
    };
    assert!(steps > 5 * (LINKERS + 1), "{steps} steps");

    let mut outcomes = Vec::new();
    // One more than there are steps: that child runs to the end, so none was missed.
    for k in 0..=steps {
        let dir = tempfile::tempdir().unwrap();
        copy_all(base.path(), dir.path());
        let out = Command::new(std::env::current_exe().unwrap())
            .args([CRASH_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(CRASH_CHILD, format!("{}\n{k}", dir.path().display()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let aborted = stderr.contains(&format!("{ABORTING} {k} "));
        if k < steps {
            assert!(
                aborted && !out.status.success(),
                "child {k} did not abort at its step: {:?}\n{stderr}",
                out.status
            );
        } else {
            assert!(
                !aborted && out.status.success(),
                "the last child ran to the end: {stderr}"
            );
        }
        // Reopening finishes what the killed process left.
        let app = open(dir.path());
        assert!(!journal_left(dir.path()), "step {k}");
        let moved = before_or_after(dir.path(), &before, &after);
        store_agrees(&app, &id, moved);
        outcomes.push(moved);
    }
    // Killed before its journal was written, the move never happened; after, it is finished.
    assert!(
        !outcomes[0] && outcomes[1..].iter().all(|m| *m),
        "{outcomes:?}"
    );
}

#[test]
fn an_undo_that_fails_too_is_finished_at_the_next_open_and_the_vault_is_before() {
    let dir = tempfile::tempdir().unwrap();
    let id = make_vault(dir.path());
    let before = snapshot(dir.path());
    let app = open(dir.path());
    // Every step from the twelfth file's on fails: the change stops half-way, and putting the
    // written files back fails as well.
    fail_from(&app, 1 + 5 * 12);
    let err = app
        .apply_file_changes(plan(dir.path(), app.vault()))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::External, "{err:?}");
    app.set_fault_injector(None);
    assert!(journal_left(dir.path()) && dir.path().join(".pkm/change.journal.back").exists());
    assert_ne!(
        snapshot(dir.path()),
        before,
        "half-way, as the failures left it"
    );
    drop(app);
    let app = open(dir.path());
    assert!(!journal_left(dir.path()));
    assert!(!dir.path().join(".pkm/change.journal.back").exists());
    assert_eq!(snapshot(dir.path()), before);
    store_agrees(&app, &id, false);
}

#[test]
fn a_journal_left_by_this_process_is_finished_before_the_next_change() {
    let dir = tempfile::tempdir().unwrap();
    let id = make_vault(dir.path());
    let before = snapshot(dir.path());
    let app = open(dir.path());
    fail_from(&app, 1 + 5 * 3);
    assert!(
        app.apply_file_changes(plan(dir.path(), app.vault()))
            .is_err()
    );
    app.set_fault_injector(None);
    assert!(journal_left(dir.path()));
    app.apply_file_changes(Vec::new()).unwrap();
    assert!(!journal_left(dir.path()));
    assert_eq!(snapshot(dir.path()), before);
    store_agrees(&app, &id, false);
    // And the change can be made now.
    let changes = plan(dir.path(), app.vault());
    let after = expected_after(&before, &changes);
    app.apply_file_changes(changes).unwrap();
    assert_eq!(snapshot(dir.path()), after);
    store_agrees(&app, &id, true);
}

#[test]
fn an_unreadable_journal_is_set_aside_and_the_vault_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let id = make_vault(dir.path());
    let before = snapshot(dir.path());
    std::fs::write(
        dir.path().join(".pkm/change.journal"),
        b"STRATUM-JOURNAL\n torn",
    )
    .unwrap();
    let app = open(dir.path());
    assert!(!journal_left(dir.path()));
    let aside: Vec<String> = std::fs::read_dir(dir.path().join(".pkm"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("change.journal.unreadable-"))
        .collect();
    assert_eq!(aside.len(), 1, "kept for a person to look at");
    assert_eq!(snapshot(dir.path()), before);
    store_agrees(&app, &id, false);
}

#[test]
fn a_note_edited_by_hand_after_a_crash_is_kept_and_the_rest_finished() {
    let base = tempfile::tempdir().unwrap();
    let id = make_vault(base.path());
    let before = snapshot(base.path());
    let after = expected_after(
        &before,
        &plan(base.path(), &Vault::open(base.path()).unwrap()),
    );
    // Killed after the journal and the first fifteen files (the moved note, n00..n13).
    let k = 1 + 5 * 15;
    let out = Command::new(std::env::current_exe().unwrap())
        .args([CRASH_TEST, "--exact", "--nocapture"])
        .env(CRASH_CHILD, format!("{}\n{k}", base.path().display()))
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Before the vault is opened again, a person edits a note already rewritten and one not yet.
    std::fs::write(base.path().join("notes/n03.md"), "- mine [[moved]]\n").unwrap();
    std::fs::write(base.path().join("notes/n20.md"), "- mine too [[target]]\n").unwrap();
    let app = open(base.path());
    assert!(!journal_left(base.path()));
    let mut expected = after.clone();
    expected.insert("notes/n03.md".into(), Some(b"- mine [[moved]]\n".to_vec()));
    expected.insert(
        "notes/n20.md".into(),
        Some(b"- mine too [[target]]\n".to_vec()),
    );
    assert_eq!(
        diff(&snapshot(base.path()), &expected),
        Vec::<String>::new()
    );
    assert_eq!(pelican_block(&app), (id, TO.to_owned()));
    let targets = graph::resolve_link_target(&app, "target").unwrap();
    assert!(targets.unresolved, "nothing is at the old path");
}
