//! `kb_set_properties` through the real binary: the note's own form, every other byte kept, the
//! index current when the call returns, the write path's guards, and a follower's call forwarded
//! to the leader.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{serial, stdio::Server};
use crate::contract::assert_shape;

fn wait_fresh(s: &mut Server) {
    for _ in 0..400 {
        if s.ok("kb_index_status", json!({}))["index_fresh"] == json!(true) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the index never became fresh");
}

fn set(s: &mut Server, args: Value) -> Value {
    let out = s.ok("kb_set_properties", args);
    assert_shape("kb_set_properties", &out);
    out
}

fn read(v: &Path, path: &str) -> String {
    std::fs::read_to_string(v.join(path)).unwrap()
}

fn tagged_paths(s: &mut Server, tag: &str) -> Vec<String> {
    let hits = s.ok("kb_search_by_tag", json!({"tag": tag}));
    hits["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["page_path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn set_properties_edits_the_frontmatter_in_place_and_the_index_sees_it_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    let text = "---\ntitle: Old\nstatus: draft   # mine\n---\n\nNotes about herons.\n";
    std::fs::write(v.join("a.md"), text).unwrap();
    let mut s = Server::start(v);
    wait_fresh(&mut s);

    let out = set(
        &mut s,
        json!({"path": "a.md", "set": {"status": "done", "tags": ["heron-watch"], "title": "New title", "aliases": ["Heron log"]}}),
    );
    assert_eq!(
        (out["form"].clone(), out["changed"].clone()),
        (json!("frontmatter"), json!(true))
    );
    assert_eq!(
        out["changes"][0],
        json!({"key": "status", "before": "draft", "after": "done"})
    );
    assert_eq!(
        out["changes"][1],
        json!({"key": "tags", "before": null, "after": ["heron-watch"]})
    );
    assert_eq!(
        read(v, "a.md"),
        "---\ntitle: New title\nstatus: done   # mine\ntags: [heron-watch]\naliases: [Heron log]\n---\n\nNotes about herons.\n"
    );
    let page = s.ok("kb_get_page", json!({"path": "a.md"}));
    assert_eq!(page["frontmatter"]["status"], "done");
    assert_eq!(page["title"], "New title");
    assert_eq!(page["modified_at"], out["modified_at"]);
    // Tags, aliases and title count at once: no reindex, no wait.
    assert_eq!(tagged_paths(&mut s, "heron-watch"), ["a.md"]);
    let tags = s.ok("kb_list_tags", json!({"prefix": "heron"}));
    assert_eq!(tags["tags"], json!([{"tag": "heron-watch", "count": 1}]));
    let resolved = s.ok("kb_resolve_link", json!({"target": "Heron log"}));
    assert_eq!(resolved["resolved"]["path"], "a.md");

    // Removing what was set, and null: the key with an empty value.
    let out = set(
        &mut s,
        json!({"path": "a.md", "set": {"status": null}, "remove": ["tags", "aliases"]}),
    );
    assert_eq!(
        out["changes"][0],
        json!({"key": "status", "before": "done", "after": null})
    );
    assert_eq!(
        read(v, "a.md"),
        "---\ntitle: New title\nstatus:   # mine\n---\n\nNotes about herons.\n"
    );
    assert!(tagged_paths(&mut s, "heron-watch").is_empty());
}

#[test]
fn set_then_remove_of_a_new_key_gives_back_the_note_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    let notes = [
        ("plain.md", "\u{feff}# Plain\r\n\r\nBody #x\r\n"),
        (
            "fm.md",
            "---\r\ntitle: \"T\"  # quoted\r\nlist:\r\n  - a\r\n---\r\nBody",
        ),
        ("props.md", "type:: book\n\n- a block\n"),
    ];
    for (path, text) in notes {
        std::fs::write(v.join(path), text).unwrap();
    }
    let mut s = Server::start(v);
    wait_fresh(&mut s);
    for (path, text) in notes {
        let out = set(
            &mut s,
            json!({"path": path, "set": {"reviewed": "2026-12-06", "score": 4.5}}),
        );
        assert_eq!(out["changed"], true);
        let page = s.ok("kb_get_page", json!({"path": path}));
        if out["form"] == "frontmatter" {
            assert_eq!(page["frontmatter"]["score"], 4.5, "{path}");
        } else {
            assert!(
                page["content"].as_str().unwrap().contains("score:: 4.5\n"),
                "{path}"
            );
        }
        set(
            &mut s,
            json!({"path": path, "remove": ["reviewed", "score"]}),
        );
        assert_eq!(read(v, path), text, "{path}");
    }
}

#[test]
fn logseq_pages_get_key_value_lines_and_lists_as_logseq_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    std::fs::create_dir_all(v.join("logseq")).unwrap();
    std::fs::create_dir_all(v.join("pages")).unwrap();
    std::fs::write(v.join("logseq/config.edn"), "{}\n").unwrap();
    std::fs::write(v.join("pages/Reading.md"), "- a block\n").unwrap();
    let mut s = Server::start(v);
    wait_fresh(&mut s);
    let out = set(
        &mut s,
        json!({"path": "pages/Reading.md", "set": {"tags": ["book", "later"], "status": "open"}}),
    );
    assert_eq!(out["form"], "logseq");
    assert_eq!(
        read(v, "pages/Reading.md"),
        "tags:: book, later\nstatus:: open\n\n- a block\n"
    );
    assert_eq!(tagged_paths(&mut s, "later"), ["pages/Reading.md"]);
}

#[test]
fn dry_run_writes_nothing_and_the_guards_of_the_write_path_hold() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    let text = "---\nstatus: draft\n---\nBody\n";
    std::fs::write(v.join("a.md"), text).unwrap();
    let mut s = Server::start(v);
    wait_fresh(&mut s);
    let before = s.ok("kb_get_page", json!({"path": "a.md"}));

    let dry = set(
        &mut s,
        json!({"path": "a.md", "set": {"status": "done"}, "dry_run": true}),
    );
    assert_eq!(
        (dry["changed"].clone(), dry["dry_run"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(dry["changes"][0]["after"], "done");
    assert_eq!(dry["modified_at"], before["modified_at"]);
    assert_eq!(read(v, "a.md"), text);

    // Nothing to change: no write, the same modified_at.
    let same = set(&mut s, json!({"path": "a.md", "set": {"status": "draft"}}));
    assert_eq!(
        (same["changed"].clone(), same["modified_at"].clone()),
        (json!(false), before["modified_at"].clone())
    );

    let code = |e: &Value| e["code"].as_i64().unwrap();
    let written = set(
        &mut s,
        json!({"path": "a.md", "set": {"status": "done"}, "expected_modified": before["modified_at"]}),
    );
    let e = s.err(
        "kb_set_properties",
        json!({"path": "a.md", "set": {"status": "lost"}, "expected_modified": before["modified_at"]}),
    );
    assert_eq!(
        (code(&e), e["data"]["kind"].clone()),
        (-32002, json!("Conflict"))
    );
    assert_eq!(read(v, "a.md"), "---\nstatus: done\n---\nBody\n");
    set(
        &mut s,
        json!({"path": "a.md", "set": {"status": "x"}, "expected_modified": written["modified_at"]}),
    );

    let e = s.err(
        "kb_set_properties",
        json!({"path": "missing.md", "set": {"a": 1}}),
    );
    assert_eq!(
        (code(&e), e["data"]["note_path"].clone()),
        (-32001, json!("missing.md"))
    );
    for args in [
        json!({"path": "a.md"}),
        json!({"path": "a.md", "set": {}, "remove": []}),
        json!({"path": "a.md", "set": {"a": 1}, "remove": ["a"]}),
        json!({"path": "a.md", "set": {"a": {"nested": 1}}}),
        json!({"path": "a.md", "set": {"a": [1, 2]}}),
        json!({"path": "a.md", "set": {"a": 1}, "unknown": 1}),
        json!({"path": "../a.md", "set": {"a": 1}}),
        json!({"path": "a.md", "set": {"a": 1}, "expected_modified": "yesterday"}),
    ] {
        let e = s.err("kb_set_properties", args.clone());
        assert_eq!(
            (code(&e), e["data"]["kind"].clone()),
            (-32602, json!("InvalidArgs")),
            "{args}: {e}"
        );
    }
    // Frontmatter this edit cannot change in place is refused, nothing written.
    std::fs::write(v.join("flow.md"), "---\n{status: x}\n---\n").unwrap();
    let e = s.err(
        "kb_set_properties",
        json!({"path": "flow.md", "set": {"status": "y"}}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    assert_eq!(read(v, "flow.md"), "---\n{status: x}\n---\n");
}

#[test]
fn a_followers_set_properties_is_written_by_the_leader() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    std::fs::write(v.join("a.md"), "# A\n").unwrap();
    let mut leader = Server::start(v);
    wait_fresh(&mut leader);
    let mut follower = Server::start(v);
    let out = set(
        &mut follower,
        json!({"path": "a.md", "set": {"tags": ["otter"]}}),
    );
    assert_eq!(read(v, "a.md"), "---\ntags: [otter]\n---\n# A\n");
    // The leader's store and index have it as the call returns: one writer for the vault.
    assert_eq!(tagged_paths(&mut leader, "otter"), ["a.md"]);
    let page = leader.ok("kb_get_page", json!({"path": "a.md"}));
    assert_eq!(page["modified_at"], out["modified_at"]);
}
