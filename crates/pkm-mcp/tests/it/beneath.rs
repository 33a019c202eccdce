//! Opening a note cannot leave the vault, whatever happens on disk meanwhile (issue 15): a folder
//! of the vault is swapped, again and again, between a real folder and a symlink to a folder
//! outside holding notes of the same names, while every tool that reads, writes, deletes or scans
//! notes runs against the real binary. Nothing from outside may ever reach a response, the index,
//! or the outside folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::common;
use common::stdio::Server;

/// The word only the outside notes hold.
const MARKER: &str = "zqxoutsidesecretqz";

/// How long the swaps race the tools (issue 15: at least 10 s).
const RACE: Duration = Duration::from_secs(10);

/// Every file under `dir`: its bytes and mtime, by relative path.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                todo.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
                let bytes = std::fs::read(e.path()).unwrap();
                out.insert(rel, (bytes, meta.modified().unwrap()));
            }
        }
    }
    out
}

/// Exchanges the two names at once (`renameat2(RENAME_EXCHANGE)`): `notes` is a real folder or
/// a symlink to the outside folder, never missing. Where the file system cannot exchange, two
/// renames do it, with a moment where `notes` is absent.
fn swap(a: &Path, b: &Path, parked: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            std::fs::rename(a, parked)?;
            std::fs::rename(b, a)?;
            std::fs::rename(parked, b)
        }
        done => Ok(done?),
    }
}

#[test]
fn symlink_swaps_never_lead_a_tool_outside_the_vault() {
    let _one = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (vault, outside) = (base.join("vault"), base.join("outside"));
    std::fs::create_dir_all(vault.join("notes")).unwrap();
    std::fs::create_dir_all(outside.join("deeper")).unwrap();
    for name in [
        "a.md",
        "b.md",
        "w0.md",
        "w1.md",
        "w2.md",
        "secret.md",
        "deeper/c.md",
    ] {
        std::fs::write(outside.join(name), format!("# {name}\n\n{MARKER}\n")).unwrap();
    }
    std::fs::write(vault.join("Home.md"), "# Home\n\n[[notes/a]]\n").unwrap();
    std::fs::write(vault.join("notes/a.md"), "# a\n\ninside a\n").unwrap();
    std::fs::write(vault.join("notes/b.md"), "# b\n\ninside b\n").unwrap();
    std::fs::create_dir(vault.join("notes/deeper")).unwrap();
    std::fs::write(vault.join("notes/deeper/c.md"), "# c\n\ninside c\n").unwrap();
    // The swap's other half: a hidden name, which scans and the watcher pass over.
    let (notes, other, parked) = (
        vault.join("notes"),
        vault.join(".swap"),
        vault.join(".parked"),
    );
    std::os::unix::fs::symlink(&outside, &other).unwrap();
    let before = snapshot(&outside);

    let mut s = Server::start(&vault);
    s.ok("kb_list_pages", json!({}));

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let (notes, other, parked) = (notes.clone(), other.clone(), parked.clone());
        std::thread::spawn(move || {
            // Bursts of swaps as fast as they go, then a pause (in either state by turns) long
            // enough for the watcher's debounce to end, so that its syncs and rescans run too.
            let mut cycle = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let burst = Instant::now();
                let mut n = 0u64;
                while burst.elapsed() < Duration::from_millis(60) || n % 2 != cycle % 2 {
                    swap(&notes, &other, &parked)?;
                    n += 1;
                    std::thread::yield_now();
                }
                swaps.fetch_add(n, Ordering::Relaxed);
                cycle += 1;
                std::thread::sleep(Duration::from_millis(150));
            }
            Ok::<(), std::io::Error>(())
        })
    };

    let mut calls = 0u64;
    let mut refused = 0u64;
    let started = Instant::now();
    let mut i = 0usize;
    while started.elapsed() < RACE {
        let w = format!("notes/w{}.md", i % 3);
        let responses = [
            s.call("kb_get_page", json!({"path": "notes/a.md"})),
            s.request("resources/read", json!({"uri": "note://notes/b.md"})),
            s.call("kb_get_page", json!({"path": "notes/deeper/c.md"})),
            s.call(
                "kb_write_page",
                json!({"path": w, "content": format!("# w\n\nwritten {i}\n")}),
            ),
            s.call(
                "kb_add_tag",
                json!({"path": "notes/b.md", "tag": format!("t{}", i % 2)}),
            ),
            s.call(
                "kb_remove_tag",
                json!({"path": "notes/b.md", "tag": format!("t{}", (i + 1) % 2)}),
            ),
            s.call(
                "kb_write_page",
                json!({"path": "notes/deeper/new.md", "content": "# new\n"}),
            ),
            s.call("kb_delete_page", json!({"path": "notes/deeper/new.md"})),
            s.call(
                "kb_delete_page",
                json!({"path": format!("notes/w{}.md", (i + 1) % 3)}),
            ),
            s.call("kb_search", json!({"query": MARKER})),
            if i.is_multiple_of(10) {
                s.call("kb_reindex", json!({}))
            } else {
                s.call("kb_list_pages", json!({}))
            },
        ];
        for r in responses {
            let text = r.to_string();
            assert!(
                !text.contains(MARKER),
                "after {} swaps, a response holds a note from outside the vault: {text}",
                swaps.load(Ordering::Relaxed)
            );
            calls += 1;
            if r["error"]["data"]["kind"] == "InvalidArgs" {
                refused += 1;
            }
        }
        i += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("{swaps} swaps, {calls} calls, {refused} refused as leading outside");
    if std::fs::symlink_metadata(&notes).unwrap().is_symlink() {
        swap(&notes, &other, &parked).unwrap();
    }
    assert!(swaps > 0);

    // Nothing outside was created, changed or removed.
    assert_eq!(snapshot(&outside), before);

    // With the real folder back, its notes read as before, and nothing from outside was indexed
    // (the scan, the watcher's syncs and the writes saw only the vault).
    let page = s.ok("kb_get_page", json!({"path": "notes/a.md"}));
    assert_eq!(page["content"], "# a\n\ninside a\n");
    s.ok("kb_reindex", json!({}));
    let hits = s.ok("kb_search", json!({"query": MARKER}));
    assert_eq!(hits["results"], json!([]), "{hits}");
    let list = s.ok("kb_list_pages", json!({"limit": 1000}));
    assert!(!list.to_string().contains("secret"), "{list}");
    for p in list["pages"].as_array().unwrap() {
        let path = p["path"].as_str().unwrap();
        let page: Value = s.ok("kb_get_page", json!({"path": path}));
        assert!(!page.to_string().contains(MARKER), "{path}: {page}");
    }
}
