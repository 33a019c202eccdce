//! External edits: the watcher applies files created, changed, renamed or deleted behind the
//! server's back, and never mistakes another program's edit for the server's own save.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pkm_core::{Vault, VaultPath};
use stratum_app::commands::{page, search};
use stratum_app::scan::{self, ScanMode};
use stratum_app::{App, AppConfig, watcher};

fn open(root: &Path) -> Arc<App> {
    let app = App::open(Vault::open(root).unwrap(), AppConfig::default()).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();
    app
}

/// Polls until `f` holds (the watcher debounces), failing after 10 s.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many results hold the word `q` (notes close in meaning may follow them: ADR-0015).
fn hits(app: &App, q: &str) -> usize {
    search::search_blocks(app, q, 50, 0)
        .unwrap()
        .results
        .iter()
        .filter(|h| h.content.contains(q))
        .count()
}

#[test]
fn external_create_change_rename_delete_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path());
    let _w = watcher::watch(&app).unwrap();

    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/ext.md"), "- external capybara").unwrap();
    eventually("created note indexed", || hits(&app, "capybara") == 1);

    std::fs::write(dir.path().join("sub/ext.md"), "- external axolotl").unwrap();
    eventually("changed note re-indexed", || {
        hits(&app, "axolotl") == 1 && hits(&app, "capybara") == 0
    });

    std::fs::rename(dir.path().join("sub/ext.md"), dir.path().join("moved.md")).unwrap();
    eventually("renamed note moved", || {
        search::search_blocks(&app, "axolotl", 10, 0)
            .unwrap()
            .results
            .iter()
            .map(|h| h.page_path.clone())
            .collect::<Vec<_>>()
            == vec!["moved.md"]
    });

    std::fs::rename(dir.path().join("sub"), dir.path().join("sub2")).unwrap();
    std::fs::write(dir.path().join("sub2/inner.md"), "- folder okapi").unwrap();
    eventually("note in a renamed folder indexed", || {
        hits(&app, "okapi") == 1
    });

    std::fs::remove_file(dir.path().join("moved.md")).unwrap();
    eventually("deleted note dropped", || hits(&app, "axolotl") == 0);
    eventually("fresh once applied", || {
        search::index_status(&app).unwrap().index_fresh
    });

    // Temp files and dot-folders are never notes.
    std::fs::write(dir.path().join(".hidden.md"), "- hidden narwhal").unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/x.md"), "- hidden narwhal").unwrap();
    std::fs::write(dir.path().join("visible.md"), "- visible marker").unwrap();
    eventually("visible note indexed", || hits(&app, "marker") == 1);
    assert_eq!(hits(&app, "narwhal"), 0);
}

#[test]
fn an_edit_right_after_our_own_save_is_not_taken_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path());
    let _w = watcher::watch(&app).unwrap();
    let p = VaultPath::parse(app.vault(), "race.md").unwrap();
    for i in 0..10 {
        page::save_page(&app, &p, &format!("- ours{i} wombat"), None).unwrap();
        std::fs::write(dir.path().join("race.md"), format!("- theirs{i} wombat")).unwrap();
        eventually("their edit wins", || hits(&app, &format!("theirs{i}")) == 1);
        assert_eq!(hits(&app, &format!("ours{i}")), 0);
    }
    assert_eq!(hits(&app, "wombat"), 1);
}

#[test]
fn notes_in_every_folder_are_watched_however_it_came() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // There before the watcher: a folder with one inside it.
    std::fs::create_dir_all(dir.path().join("old/deep")).unwrap();
    let app = open(dir.path());
    let _w = watcher::watch(&app).unwrap();

    std::fs::write(dir.path().join("old/deep/a.md"), "- deep quokka").unwrap();
    eventually("a note deep in a folder that was there", || {
        hits(&app, "quokka") == 1
    });
    // A folder made inside a watched one, and a note in it at once.
    std::fs::create_dir(dir.path().join("old/deep/newer")).unwrap();
    std::fs::write(dir.path().join("old/deep/newer/b.md"), "- newer tapir").unwrap();
    eventually("a note in a folder made inside a watched one", || {
        hits(&app, "tapir") == 1
    });
    // A folder with notes moved in from outside the vault: its notes, then a later edit in it.
    std::fs::create_dir_all(outside.path().join("moved/in")).unwrap();
    std::fs::write(outside.path().join("moved/in/c.md"), "- moved gecko").unwrap();
    std::fs::rename(outside.path().join("moved"), dir.path().join("moved")).unwrap();
    eventually("the notes of a folder moved in", || {
        hits(&app, "gecko") == 1
    });
    std::fs::write(dir.path().join("moved/in/c.md"), "- moved ibex").unwrap();
    eventually("an edit in a folder moved in", || {
        hits(&app, "ibex") == 1 && hits(&app, "gecko") == 0
    });
    // The folder renamed within the vault: an edit under its new name.
    std::fs::rename(dir.path().join("moved"), dir.path().join("renamed")).unwrap();
    std::fs::write(dir.path().join("renamed/in/c.md"), "- renamed civet").unwrap();
    eventually("an edit in a renamed folder", || {
        search::search_blocks(&app, "civet", 10, 0)
            .unwrap()
            .results
            .iter()
            .map(|h| h.page_path.clone())
            .collect::<Vec<_>>()
            == vec!["renamed/in/c.md"]
    });
    eventually("fresh once applied", || {
        search::index_status(&app).unwrap().index_fresh
    });
}
