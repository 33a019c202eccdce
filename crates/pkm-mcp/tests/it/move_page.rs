//! `kb_move_page` (ADR-0019) through the real binary: a move rewrites every link to the note in
//! its own form and keeps its backlinks, `dry_run` changes nothing, a folder moves with its
//! notes, and each refusal (Conflict, NotFound, InvalidArgs) changes nothing. Its scope is
//! checked with every tool's in `http_scope.rs`.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::common;
use common::http::snapshot;
use common::stdio::Server;
use common::temp_example_vault as example_vault;

fn assert_shape(value: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/output/kb_move_page.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{value}");
}

fn backlinks(s: &mut Server, path: &str) -> BTreeSet<String> {
    s.ok("kb_backlinks", json!({ "path": path }))["backlinks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["source_page"].as_str().unwrap().to_owned())
        .collect()
}

fn read(vault: &Path, rel: &str) -> String {
    std::fs::read_to_string(vault.join(rel)).unwrap()
}

#[test]
fn a_rename_rewrites_every_link_in_its_form_and_keeps_the_backlinks() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    let mut s = Server::start(&vault);
    let from = "projects/Beacon.md";
    let to = "archive/Lighthouse.md";
    let before = backlinks(&mut s, from);
    assert!(before.len() >= 2, "{before:?}");
    let untouched = snapshot(&vault);

    let args = json!({ "from": from, "to": to });
    let mut dry = args.clone();
    dry["dry_run"] = json!(true);
    let planned = s.ok("kb_move_page", dry);
    assert_shape(&planned);
    assert_eq!(planned["dry_run"], json!(true));
    assert_eq!(planned["moved"], json!([{ "from": from, "to": to }]));
    assert_eq!(snapshot(&vault), untouched, "a dry run changes nothing");

    let done = s.ok("kb_move_page", args);
    assert_shape(&done);
    assert_eq!(done["dry_run"], json!(false));
    assert_eq!(done["moved"], planned["moved"]);
    assert_eq!(done["rewritten"], planned["rewritten"]);
    assert!(!vault.join(from).exists() && vault.join(to).exists());

    // Each rewritten note holds no link to the old name; the markdown link stays relative.
    let relaunch = read(&vault, "projects/Website Relaunch.md");
    assert!(
        relaunch.contains("[Beacon](../archive/Lighthouse.md)"),
        "{relaunch}"
    );
    for r in done["rewritten"].as_array().unwrap() {
        let text = read(&vault, r["path"].as_str().unwrap());
        assert!(!text.contains("[[Beacon]]"), "{text}");
        assert!(!text.contains("[[Beacon|"), "{text}");
        assert!(r["links"].as_u64().unwrap() >= 1);
    }
    // The same notes link to it at its new path; nothing links to the old one.
    let after = backlinks(&mut s, to);
    assert_eq!(after, before);
    let resolved = s.ok("kb_resolve_link", json!({ "target": "[[Lighthouse|x]]" }));
    assert_eq!(resolved["resolved"]["path"], json!(to), "{resolved}");

    // The old path is free again; the new one is taken.
    let e = s.err("kb_move_page", json!({ "from": from, "to": "x.md" }));
    assert_eq!(e["code"], json!(-32001), "{e}");
}

#[test]
fn a_folder_moves_with_its_notes_and_their_links() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    let mut s = Server::start(&vault);
    let ada_before = backlinks(&mut s, "people/Ada Lovelace.md");
    let people: Vec<String> = std::fs::read_dir(vault.join("people"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .collect();

    let done = s.ok("kb_move_page", json!({ "from": "people/", "to": "team/" }));
    assert_shape(&done);
    assert_eq!(done["moved"].as_array().unwrap().len(), people.len());
    for name in &people {
        assert!(vault.join("team").join(name).exists(), "{name}");
        assert!(!vault.join("people").join(name).exists(), "{name}");
    }
    // Notes linking from inside the folder moved with it.
    let map = |p: &String| match p.strip_prefix("people/") {
        Some(rest) => format!("team/{rest}"),
        None => p.clone(),
    };
    let want: BTreeSet<String> = ada_before.iter().map(map).collect();
    assert_eq!(backlinks(&mut s, "team/Ada Lovelace.md"), want);
}

#[test]
fn refusals_change_nothing() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    let mut s = Server::start(&vault);
    let note = "projects/Beacon.md";
    let modified = s.ok("kb_get_page", json!({ "path": note }))["modified_at"].clone();
    let untouched = snapshot(&vault);
    let cases = [
        (json!({ "from": note, "to": "projects/Stratum.md" }), -32002),
        (json!({ "from": "nowhere/None.md", "to": "x.md" }), -32001),
        (json!({ "from": "nowhere/", "to": "x/" }), -32001),
        (json!({ "from": note, "to": note }), -32602),
        (json!({ "from": note, "to": "projects/" }), -32602),
        (
            json!({ "from": "projects/", "to": "projects/sub/" }),
            -32602,
        ),
        (json!({ "from": "../x.md", "to": "x.md" }), -32602),
        (
            json!({ "from": note, "to": "x.md", "expected_modified": "2001-01-01T00:00:00Z" }),
            -32002,
        ),
    ];
    for (args, code) in cases {
        let e = s.err("kb_move_page", args.clone());
        assert_eq!(e["code"], json!(code), "{args}: {e}");
    }
    assert_eq!(
        snapshot(&vault),
        untouched,
        "a refused move changed nothing"
    );
    // The right expected_modified lets it through.
    let done = s.ok(
        "kb_move_page",
        json!({ "from": note, "to": "x.md", "expected_modified": modified, "update_links": false }),
    );
    assert_eq!(done["rewritten"], json!([]));
    assert!(vault.join("x.md").exists());
}
