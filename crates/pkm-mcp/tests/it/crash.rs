//! Crash safety with a shared vault: two processes serve it, writes go to both, and the leading one
//! is `kill -9`ed at a random moment of each cycle while the follower goes on (and takes the lead).
//! Every acknowledged write must be on disk byte-exact, no note truncated or interleaved, no temp
//! file a note, and, with no reindex, the store and the index must agree with the files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::collections::HashMap;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common;
use common::stdio::Server;

/// A small deterministic generator (no dependency needed for a test's dice).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn body(tag: &str, len: usize) -> String {
    let mut s = format!("---\ntitle: {tag}\n---\n- marker {tag}\n");
    while s.len() < len {
        s.push_str(&format!("  - filler line for {tag} with some words\n"));
    }
    s
}

#[test]
fn kill_9_of_the_leader_during_writes_loses_no_acknowledged_write() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let mut rng = Lcg(0x5eed);
    // path -> (cycle, content) last acknowledged; path -> every (cycle, content) sent.
    let mut acked: HashMap<String, (u64, String)> = HashMap::new();
    let mut sent: HashMap<String, Vec<(u64, String)>> = HashMap::new();
    let (mut acknowledged, mut cycles) = (0usize, 0usize);
    // Two processes serve the vault at all times: the older leads, the other follows and
    // forwards its writes to the leader.
    let mut leader = Server::start_with(vault, "error", Stdio::null());
    let mut follower = Server::start_with(vault, "error", Stdio::null());
    for cycle in 0..50u64 {
        let writes = 8;
        // Per process: request id -> (path, content).
        let mut ids: [HashMap<u64, (String, String)>; 2] = [HashMap::new(), HashMap::new()];
        for i in 0..writes {
            // Half the writes go to a few shared notes, overwriting each other.
            let path = if rng.next(2) == 0 {
                format!("shared/s{}.md", rng.next(3))
            } else {
                format!("c{cycle}/n{i}.md")
            };
            let content = body(&format!("k{cycle}x{i}"), 200 + rng.next(20_000) as usize);
            let id = 1000 + i;
            sent.entry(path.clone())
                .or_default()
                .push((cycle, content.clone()));
            let to = rng.next(2) as usize;
            let server = if to == 0 { &mut leader } else { &mut follower };
            server.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"kb_write_page","arguments":{"path":path,"content":content}}}));
            ids[to].insert(id, (path, content));
        }
        let mut take = |r: Value, ids: &HashMap<u64, (String, String)>| -> bool {
            let Some((path, content)) = r["id"].as_u64().and_then(|id| ids.get(&id)) else {
                return false;
            };
            if r.get("result").is_some() {
                acked.insert(path.clone(), (cycle, content.clone()));
                acknowledged += 1;
            }
            true
        };
        // Read a random number of the leader's answers, then kill it mid-stream.
        let wait_for = rng.next(ids[0].len() as u64 + 1);
        let mut got = 0;
        while got < wait_for {
            if take(leader.read(), &ids[0]) {
                got += 1;
            }
        }
        leader.kill9();
        cycles += 1;
        // Every write sent to the follower gets an answer: done through the old leader, done by
        // the follower once it leads, or an error saying it may not have happened.
        let mut got = 0;
        while got < ids[1].len() {
            if take(follower.read(), &ids[1]) {
                got += 1;
            }
        }

        for (path, (acked_cycle, content)) in &acked {
            let on_disk = std::fs::read_to_string(vault.join(path)).unwrap();
            // The acknowledged text, or another write to the same note that was in flight with it
            // or after it (requests in flight together run concurrently, in no promised order).
            let ok = &on_disk == content
                || sent[path]
                    .iter()
                    .any(|(c, v)| c >= acked_cycle && *v == on_disk);
            assert!(
                ok,
                "cycle {cycle}: {path} holds neither its acknowledged nor a concurrent or later version"
            );
        }
        // The follower leads now; a new process follows it.
        leader = follower;
        follower = Server::start_with(vault, "error", Stdio::null());
    }
    drop(follower);

    // No reindex: the surviving leader's own scan finishes what the killed ones left half-done,
    // and then the store and the index agree with the files.
    let mut s = leader;
    let start = std::time::Instant::now();
    while s.call("kb_index_status", json!({}))["result"]["structuredContent"]["index_fresh"]
        != json!(true)
    {
        assert!(
            start.elapsed().as_secs() < 30,
            "the index never became fresh"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let args = match &cursor {
            Some(c) => json!({"limit": 1000, "cursor": c}),
            None => json!({"limit": 1000}),
        };
        let r = s.call("kb_list_pages", args);
        let out = &r["result"]["structuredContent"];
        listed.extend(
            out["pages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["path"].as_str().unwrap().to_owned()),
        );
        match out["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    for path in &listed {
        assert!(
            sent.contains_key(path),
            "{path} is not a note anyone wrote (a temp file?)"
        );
        let on_disk = std::fs::read_to_string(vault.join(path)).unwrap();
        assert!(
            sent[path].iter().any(|(_, v)| *v == on_disk),
            "{path} is truncated or interleaved"
        );
        let tag = on_disk
            .lines()
            .nth(1)
            .unwrap()
            .trim_start_matches("title: ")
            .to_owned();
        let r = s.call("kb_search", json!({"query": format!("marker {tag}")}));
        let hits = r["result"]["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .clone();
        assert!(
            hits.iter().any(|h| h["page_path"] == json!(path)),
            "{path}: the index disagrees with the file"
        );
    }
    for path in acked.keys() {
        assert!(
            listed.contains(path),
            "acknowledged {path} is missing from the store"
        );
    }
    println!(
        "crash harness: {cycles} kill -9 cycles of the leader, {acknowledged} writes acknowledged, 0 lost"
    );
    assert!(acknowledged > 0);
}

/// A vault's first scan commits its whole index at once, and syncs it then, while the store
/// builds its indexes: the index carries no unsynced mark from there, though the server runs on,
/// until its next commit. A kill after the scan leaves nothing for the next open to check.
#[test]
fn the_index_of_a_first_scan_is_on_the_disk_once_the_scan_ends_and_the_next_commit_marks_it() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    for i in 0..40 {
        std::fs::write(vault.join(format!("note {i}.md")), format!("- otter {i}\n")).unwrap();
    }
    let mark = vault.join(".pkm/search/unsynced");

    let mut s = Server::start(vault);
    // Index-backed tools wait for the first scan.
    let found = s.ok("kb_search", json!({"query": "otter", "limit": 50}));
    assert_eq!(found["results"].as_array().unwrap().len(), 40);
    assert!(!mark.exists(), "the first scan's index is synced");
    s.ok(
        "kb_write_page",
        json!({"path": "n.md", "content": "- walrus\n"}),
    );
    assert!(mark.exists(), "a commit after it is not synced");
    s.kill9();
}

/// Index commits are not synced (ADR-0024). A server its client stops syncs the index and drops
/// its mark; one killed leaves the mark, and the next server checks the index's files, keeps it
/// (no rebuild) and answers from it at once.
#[test]
fn a_server_stopped_leaves_its_index_on_the_disk_and_one_killed_leaves_it_checked_at_the_next_open()
{
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let mark = vault.join(".pkm/search/unsynced");
    let hits = |s: &mut Server, word: &str| {
        s.ok("kb_search", json!({"query": word}))["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["page_path"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };

    let mut s = Server::start(vault);
    s.ok(
        "kb_write_page",
        json!({"path": "n.md", "content": "- walrus\n"}),
    );
    assert!(mark.exists(), "a commit is not synced");
    drop(s); // stdin closed: the server exits on its own
    assert!(
        !mark.exists(),
        "a clean stop syncs the index and drops the mark"
    );

    let mut s = Server::start(vault);
    s.ok(
        "kb_write_page",
        json!({"path": "m.md", "content": "- narwhal\n"}),
    );
    s.kill9();
    assert!(mark.exists());

    let log = dir.path().join("server.log");
    let mut s = Server::start_with(
        vault,
        "warn",
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    assert_eq!(hits(&mut s, "narwhal"), ["m.md"]);
    assert_eq!(hits(&mut s, "walrus"), ["n.md"]);
    drop(s);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("recreating"), "the index was kept: {log}");
    assert!(!mark.exists());
}

/// A new vault's first scan commits the store in pieces, its random-keyed indexes (block ids,
/// link targets, tags) built once at the end (`StoreWriter::commit_piece`). Killed after a piece,
/// it leaves those pages without the indexes: the next run builds them and finishes the notes,
/// and every note is found.
#[test]
fn a_first_scan_killed_after_a_piece_is_finished_by_the_next_run() {
    use rusqlite::{Connection, OpenFlags};
    const NOTES: usize = 6000;
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    for i in 0..NOTES {
        let text = format!("- note {i} about quokka{i} [[n{}]] #pile{}\n", i + 1, i % 7);
        std::fs::write(vault.join(format!("n{i}.md")), text).unwrap();
    }
    let db = vault.join(".pkm/blocks.db");
    let look = |sql: &str| -> Option<i64> {
        let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
        conn.query_row(sql, [], |r| r.get(0)).ok()
    };
    let pages = "SELECT count(*) FROM pages";
    let id_index = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'blocks_id'";

    let mut scan = std::process::Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
        .arg("index")
        .arg("--vault")
        .arg(vault)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while look(pages).unwrap_or(0) == 0 {
        assert!(
            scan.try_wait().unwrap().is_none(),
            "the scan ended before a piece of it was seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    scan.kill().unwrap();
    scan.wait().unwrap();
    let stored = look(pages).unwrap();
    assert!(stored > 0 && stored < NOTES as i64, "{stored} pages stored");
    assert_eq!(
        look(id_index),
        Some(0),
        "killed before the indexes were built"
    );

    common::cli([
        std::ffi::OsStr::new("index"),
        "--vault".as_ref(),
        vault.as_os_str(),
    ]);
    assert_eq!(look(pages), Some(NOTES as i64));
    assert_eq!(look(id_index), Some(1));
    let mut s = Server::start(vault);
    for i in [0, NOTES - 1] {
        let found = s.ok("kb_search", json!({"query": format!("quokka{i}")}));
        assert_eq!(
            found["results"][0]["page_path"],
            format!("n{i}.md"),
            "{found}"
        );
    }
    let backlinks = s.ok("kb_backlinks", json!({"path": "n1.md"}));
    assert_eq!(
        backlinks["backlinks"][0]["source_page"], "n0.md",
        "{backlinks}"
    );
    let tagged = s.ok("kb_search_by_tag", json!({"tag": "pile3", "limit": 1}));
    let pile = (0..NOTES).filter(|i| i % 7 == 3).count();
    assert_eq!(tagged["total"], pile, "{tagged}");
}
