//! The extension tools that work inside a note (ADR-0016): `kb_edit_page`, `kb_get_outline`,
//! `kb_get_section`, driven through the real binary: their answers in their output schemas, each
//! error code, the one write path (expected_modified, index and backlinks current on return), an
//! outline note, and a follower process's edit forwarded to the leader.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::serial;
use common::stdio::Server;
use common::temp_example_vault as example_vault;

const NOTE: &str = "projects/Stratum.md";

fn assert_shape(tool: &str, value: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("schemas/output/{tool}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{tool}: {errors:?}\n{value}");
}

fn wait_fresh(s: &mut Server) {
    let start = Instant::now();
    while s.ok("kb_index_status", json!({}))["index_fresh"] != json!(true) {
        assert!(start.elapsed() < Duration::from_secs(20), "never fresh");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn paths_found(s: &mut Server, q: &str) -> Vec<String> {
    s.ok("kb_search", json!({ "query": q }))["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["content"].as_str().unwrap().contains(q))
        .map(|h| h["page_path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn outline_section_and_edits_on_the_example_vault() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    let mut s = Server::start(&vault);
    wait_fresh(&mut s);

    let outline = s.ok("kb_get_outline", json!({ "path": NOTE }));
    assert_shape("kb_get_outline", &outline);
    let heads = outline["headings"].as_array().unwrap();
    let paths: Vec<&str> = heads
        .iter()
        .map(|h| h["section"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "Stratum",
            "Stratum#Architecture",
            "Stratum#Roadmap",
            "Stratum#Open issues",
            "Stratum#Related"
        ]
    );
    assert_eq!(
        (heads[0]["level"].clone(), heads[0]["line_start"].clone()),
        (json!(1), json!(14))
    );
    assert!(heads.iter().all(|h| h["block_id"].is_string()), "{outline}");

    let section = s.ok(
        "kb_get_section",
        json!({"path": NOTE, "section": " open ISSUES "}),
    );
    assert_shape("kb_get_section", &section);
    assert_eq!(section["section"], "Stratum#Open issues");
    assert!(
        section["text"]
            .as_str()
            .unwrap()
            .starts_with("## Open issues\n- Write amplification"),
        "{section}"
    );
    assert_eq!(section["line_start"], 33);
    let page = s.ok("kb_get_page", json!({ "path": NOTE }));
    assert_eq!(section["modified_at"], page["modified_at"]);

    // An append under a heading, guarded by the section's modified_at: the line lands at the
    // section's end, every other byte stays, and the index and backlinks know it on return.
    s.ok(
        "kb_write_page",
        json!({"path": "inbox/Edit Target.md", "content": "# Edit Target\n"}),
    );
    let before = std::fs::read_to_string(vault.join(NOTE)).unwrap();
    let line = "- Compaction stalls, see [[Edit Target]] zanzibarword";
    let edited = s.ok(
        "kb_edit_page",
        json!({"path": NOTE, "edits": [{"op": "append", "section": "Open issues", "text": line}], "expected_modified": section["modified_at"]}),
    );
    assert_shape("kb_edit_page", &edited);
    let after = std::fs::read_to_string(vault.join(NOTE)).unwrap();
    let anchor = "- Fuzzing harness, owned by [[sam okafor]]\n";
    assert_eq!(
        after,
        before.replace(anchor, &format!("{anchor}{line}\n")),
        "only the line was added"
    );
    assert_eq!(edited["content"], after.as_str());
    assert_eq!(edited["written"], true);
    assert_ne!(edited["modified_at"], page["modified_at"]);
    let diff = edited["diff"].as_str().unwrap();
    assert!(
        diff.starts_with(&format!("--- a/{NOTE}\n+++ b/{NOTE}\n@@ "))
            && diff.contains(&format!("\n+{line}\n")),
        "{diff}"
    );
    assert_eq!(paths_found(&mut s, "zanzibarword"), [NOTE]);
    let backlinks = s.ok("kb_backlinks", json!({"path": "inbox/Edit Target.md"}));
    assert!(
        backlinks["backlinks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["source_page"] == NOTE),
        "{backlinks}"
    );
    let again = s.ok(
        "kb_get_section",
        json!({"path": NOTE, "section": "Open issues"}),
    );
    assert!(
        again["text"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{line}\n")),
        "{again}"
    );

    // A dry run writes nothing and says what would change.
    let dry = s.ok(
        "kb_edit_page",
        json!({"path": NOTE, "edits": [{"op": "replace", "find": "zanzibarword", "text": "quokka"}], "dry_run": true}),
    );
    assert_shape("kb_edit_page", &dry);
    assert_eq!(dry["written"], false);
    assert_eq!(dry["modified_at"], edited["modified_at"]);
    assert!(dry["content"].as_str().unwrap().contains("]] quokka"));
    assert!(
        dry["diff"]
            .as_str()
            .unwrap()
            .contains(&format!("\n-{line}\n+")),
        "{dry}"
    );
    assert_eq!(std::fs::read_to_string(vault.join(NOTE)).unwrap(), after);

    // A block by the id a search hit gives: its own text changes.
    let hit = s.ok("kb_search", json!({"query": "zanzibarword"}))["results"][0].clone();
    assert!(hit["content"].as_str().unwrap().contains("zanzibarword"));
    s.ok(
        "kb_edit_page",
        json!({"path": NOTE, "edits": [{"op": "replace_block", "block_id": hit["block_id"], "text": "Compaction stalls fixed"}]}),
    );
    let last = std::fs::read_to_string(vault.join(NOTE)).unwrap();
    assert_eq!(
        last,
        after.replace(line, "- Compaction stalls fixed"),
        "only the block's text changed"
    );
    assert!(paths_found(&mut s, "zanzibarword").is_empty());
}

#[test]
fn each_error_code_of_the_edit_tools() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    let mut s = Server::start(&vault);
    let code = |e: &Value| e["code"].as_i64().unwrap();
    let on_disk = || std::fs::read(vault.join(NOTE)).unwrap();
    let before = on_disk();

    // NotFound: no such note; no such block.
    for (tool, args) in [
        (
            "kb_edit_page",
            json!({"path": "missing.md", "edits": [{"op": "append", "text": "x"}]}),
        ),
        ("kb_get_outline", json!({"path": "missing.md"})),
        (
            "kb_get_section",
            json!({"path": "missing.md", "section": "A"}),
        ),
    ] {
        let e = s.err(tool, args);
        assert_eq!(code(&e), -32001, "{tool}: {e}");
        assert_eq!(e["data"]["note_path"], "missing.md");
    }
    assert!(
        !vault.join("missing.md").exists(),
        "an edit creates no note"
    );
    let e = s.err(
        "kb_edit_page",
        json!({"path": NOTE, "edits": [{"op": "replace_block", "block_id": "00000000-0000-4000-8000-000000000000", "text": "x"}]}),
    );
    assert_eq!(
        (code(&e), e["data"]["kind"].as_str()),
        (-32001, Some("NotFound")),
        "{e}"
    );

    // InvalidArgs: a section the note does not have names the ones it has.
    for tool in ["kb_get_section", "kb_edit_page"] {
        let args = if tool == "kb_get_section" {
            json!({"path": NOTE, "section": "Nowhere"})
        } else {
            json!({"path": NOTE, "edits": [{"op": "replace_section", "section": "Nowhere", "text": "x"}]})
        };
        let e = s.err(tool, args);
        assert_eq!(code(&e), -32602, "{e}");
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.contains("Stratum#Roadmap, Stratum#Open issues"),
            "{msg}"
        );
    }
    // An ambiguous one names the choices.
    s.ok(
        "kb_write_page",
        json!({"path": "dup.md", "content": "# A\n## Notes\nx\n# B\n## Notes\ny\n"}),
    );
    let e = s.err(
        "kb_get_section",
        json!({"path": "dup.md", "section": "notes"}),
    );
    assert_eq!(code(&e), -32602);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("A#Notes (line 2), B#Notes (line 5)"),
        "{e}"
    );
    assert_eq!(
        s.ok(
            "kb_get_section",
            json!({"path": "dup.md", "section": "B#Notes"})
        )["text"],
        "## Notes\ny\n"
    );
    // Headings repeated under one heading: the outline numbers them, and each number addresses
    // its own section for reading and editing.
    s.ok(
        "kb_write_page",
        json!({"path": "log.md", "content": "# Log\n## Done\na\n## Done\nb\n"}),
    );
    assert_eq!(
        outline_paths(&mut s, "log.md"),
        ["Log", "Log#Done[1]", "Log#Done[2]"]
    );
    s.ok(
        "kb_edit_page",
        json!({"path": "log.md", "edits": [{"op": "append", "section": "Log#Done[2]", "text": "c"}]}),
    );
    let second = s.ok(
        "kb_get_section",
        json!({"path": "log.md", "section": "Log#Done[2]"}),
    );
    assert_eq!(second["text"], "## Done\nb\nc\n");
    assert_eq!(second["section"], "Log#Done[2]");
    let e = s.err(
        "kb_get_section",
        json!({"path": "log.md", "section": "Log#Done"}),
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Log#Done[1] (line 2), Log#Done[2] (line 4)"),
        "{e}"
    );
    // A replace that finds another count refuses the whole list: nothing is written.
    let e = s.err(
        "kb_edit_page",
        json!({"path": NOTE, "edits": [{"op": "append", "text": "fine"}, {"op": "replace", "find": "Stratum", "text": "S"}]}),
    );
    assert_eq!(code(&e), -32602);
    assert!(
        e["message"].as_str().unwrap().starts_with("edit 2: found "),
        "{e}"
    );
    // Arguments the schema refuses.
    for edits in [
        json!([]),
        json!([{"op": "explode", "text": "x"}]),
        json!([{"op": "append"}]),
        json!([{"op": "append", "text": "x", "find": "y"}]),
        json!([{"op": "replace", "find": "x", "text": "y", "count": 0}]),
        json!([{"op": "replace", "find": "", "text": "y"}]),
        json!(vec![json!({"op": "append", "text": "x"}); 51]),
    ] {
        let e = s.err("kb_edit_page", json!({"path": NOTE, "edits": edits}));
        assert_eq!(code(&e), -32602, "{edits}: {e}");
    }

    // Conflict: a stale expected_modified, nothing written.
    let e = s.err(
        "kb_edit_page",
        json!({"path": NOTE, "edits": [{"op": "append", "text": "x"}], "expected_modified": "2020-01-01T00:00:00Z"}),
    );
    assert_eq!(
        (code(&e), e["data"]["kind"].as_str()),
        (-32002, Some("Conflict")),
        "{e}"
    );
    assert_eq!(on_disk(), before, "no refused edit wrote anything");
}

#[test]
fn an_outline_note_gets_blocks_at_their_indentation() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    std::fs::create_dir_all(vault.join("logseq")).unwrap();
    std::fs::write(vault.join("logseq/config.edn"), "{}\n").unwrap();
    std::fs::create_dir_all(vault.join("pages")).unwrap();
    let text =
        "title:: Plans\n\n- ## Beds\n\t- tomatoes\n- DONE other\n- Tools\n  heading:: true\n";
    std::fs::write(vault.join("pages/Plans.md"), text).unwrap();
    let mut s = Server::start(vault);
    wait_fresh(&mut s);
    assert_eq!(outline_paths(&mut s, "pages/Plans.md"), ["Beds", "Tools"]);
    let edited = s.ok(
        "kb_edit_page",
        json!({"path": "pages/Plans.md", "edits": [
            {"op": "append", "section": "Beds", "text": "peppers"},
            {"op": "append", "section": "Tools", "text": "rake"},
            {"op": "append", "text": "last block"}
        ]}),
    );
    assert_eq!(
        edited["content"],
        "title:: Plans\n\n- ## Beds\n\t- tomatoes\n\t- peppers\n- DONE other\n- Tools\n  heading:: true\n\t- rake\n- last block\n"
    );
    let section = s.ok(
        "kb_get_section",
        json!({"path": "pages/Plans.md", "section": "beds"}),
    );
    assert_eq!(section["text"], "- ## Beds\n\t- tomatoes\n\t- peppers\n");
}

#[test]
fn a_follower_process_edit_is_forwarded_to_the_leader() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    std::fs::write(v.join("n.md"), "# A\nx\n\n# B\ny\n").unwrap();
    let mut leader = Server::start(v);
    wait_fresh(&mut leader);
    let mut follower = Server::start(v);
    let seen = follower.ok("kb_get_section", json!({"path": "n.md", "section": "A"}));
    let edited = follower.ok(
        "kb_edit_page",
        json!({"path": "n.md", "edits": [{"op": "append", "section": "A", "text": "- a wombat line"}], "expected_modified": seen["modified_at"]}),
    );
    assert_eq!(edited["content"], "# A\nx\n- a wombat line\n\n# B\ny\n");
    assert_eq!(
        std::fs::read_to_string(v.join("n.md")).unwrap(),
        "# A\nx\n- a wombat line\n\n# B\ny\n"
    );
    // The leader answers from the same store and index, at once.
    assert_eq!(paths_found(&mut leader, "wombat"), ["n.md"]);
    assert_eq!(
        leader.ok("kb_get_section", json!({"path": "n.md", "section": "A"}))["text"],
        "# A\nx\n- a wombat line\n"
    );
    // The follower's stale expected_modified is refused by the leader, nothing changed.
    let e = follower.err(
        "kb_edit_page",
        json!({"path": "n.md", "edits": [{"op": "append", "text": "late"}], "expected_modified": seen["modified_at"]}),
    );
    assert_eq!(e["data"]["kind"], "Conflict", "{e}");
    assert_eq!(
        std::fs::read_to_string(v.join("n.md")).unwrap(),
        "# A\nx\n- a wombat line\n\n# B\ny\n"
    );
}

/// The section paths `kb_get_outline` gives for `path`, in document order.
fn outline_paths(s: &mut Server, path: &str) -> Vec<String> {
    s.ok("kb_get_outline", json!({ "path": path }))["headings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["section"].as_str().unwrap().to_owned())
        .collect()
}
