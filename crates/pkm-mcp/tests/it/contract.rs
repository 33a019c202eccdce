//! Contract tests for the fifteen kb_* tools (contract §5, §8, §11; ADR-0013 "MCP
//! surface"), driven through the real `stratum-mcp --stdio` binary on temp copies of the example
//! vault.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common;
use common::stdio::Server;
use common::temp_example_vault as example_vault;

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

/// The §5 schemas as `docs/advanced/mcp.md` states them, by tool name.
fn contract_schemas() -> Vec<(String, Value)> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/advanced/mcp.md"),
    )
    .unwrap();
    let mut out = Vec::new();
    let mut rest = doc.as_str();
    while let Some(i) = rest.find("### 5.") {
        rest = &rest[i + 6..];
        let name = rest.split('`').nth(1).unwrap().to_owned();
        let start = rest.find("```json").unwrap() + 7;
        let end = start + rest[start..].find("```").unwrap();
        out.push((name, serde_json::from_str(&rest[start..end]).unwrap()));
    }
    out
}

#[test]
fn schemas_are_the_contract_verbatim_and_served_as_is() {
    let contract = contract_schemas();
    assert_eq!(contract.len(), 15);
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path());
    let listed = s.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    // The contract's fifteen and the extensions of docs/advanced/mcp.md's "Extensions".
    assert_eq!(tools.len(), 22);
    for (name, schema) in contract {
        let file: Value = serde_json::from_str(
            &std::fs::read_to_string(schema_dir().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        // Same keys in the same order: byte-equal when serialized alike.
        assert_eq!(
            file.to_string(),
            schema.to_string(),
            "schemas/{name}.json differs from the contract"
        );
        let served = tools
            .iter()
            .find(|t| t["name"] == json!(name))
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert_eq!(
            served["inputSchema"].to_string(),
            schema.to_string(),
            "{name} served schema"
        );
        assert!(
            served["outputSchema"].is_object()
                && served["annotations"]["readOnlyHint"].is_boolean(),
            "{served}"
        );
        assert!(served["description"].as_str().unwrap().len() > 20);
    }
}

#[test]
fn initialize_announces_the_pinned_revision() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path());
    let again = s.request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}));
    // A second initialize on one connection is refused or answered the same; the first was checked in start().
    assert!(again.get("error").is_some() || again["result"]["serverInfo"]["name"] == "stratum-mcp");
    let dir2 = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
        .args(["--vault"])
        .arg(dir2.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}})).unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    let r = &init["result"];
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert_eq!(r["serverInfo"]["name"], "stratum-mcp");
    assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["capabilities"]["tools"]["listChanged"], false);
    let _ = child.kill();
    let _ = child.wait();
}

/// The server runs on regular pages: with transparent huge pages, the kernel zeroed a 2 MiB page
/// at the first touch of each of the allocator's arenas (a sixth of a cold index's CPU).
#[test]
fn the_server_asks_the_kernel_for_no_transparent_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("THP_enabled:"))
        .unwrap_or_else(|| panic!("no THP_enabled line in {status}"));
    assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
}

fn output_validator(tool: &str) -> jsonschema::Validator {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(schema_dir().join(format!("output/{tool}.json"))).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&v).unwrap()
}

pub(crate) fn assert_shape(tool: &str, value: &Value) {
    let v = output_validator(tool);
    let errors: Vec<String> = v.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{tool} output does not match its outputSchema: {errors:?}\n{value}"
    );
}

#[test]
fn every_tool_answers_in_its_contract_shape() {
    let dir = example_vault();
    let mut s = Server::start(&dir.path().join("vault"));
    let mut call = |tool: &str, args: Value| {
        let out = s.ok(tool, args);
        assert_shape(tool, &out);
        out
    };

    // A client waits for the first indexing the way it is told to: by polling freshness.
    for _ in 0..200 {
        if call("kb_index_status", json!({}))["index_fresh"] == json!(true) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let info = call("kb_vault_info", json!({}));
    assert_eq!(info["page_count"], 40);
    let status = call("kb_index_status", json!({}));
    assert_eq!(status["total_pages"], 40);
    assert_eq!(status["indexed_pages"], 40);

    let page = call("kb_get_page", json!({"path": "projects/Stratum.md"}));
    assert_eq!(page["slug"], "projects/Stratum");
    assert_eq!(page["title"], "Stratum");
    assert!(
        page["content"].as_str().unwrap().starts_with("---\n"),
        "content keeps the frontmatter"
    );
    assert_eq!(page["frontmatter"]["aliases"][0], "Stratum DB");
    assert!(
        page["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["target"] == "Beacon")
    );
    assert!(
        !page["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["target"] == "Key"),
        "no links from code blocks"
    );

    let list = call("kb_list_pages", json!({"limit": 5}));
    assert_eq!(list["pages"].as_array().unwrap().len(), 5);
    let next = call(
        "kb_list_pages",
        json!({"limit": 5, "cursor": list["next_cursor"]}),
    );
    assert_ne!(next["pages"][0]["path"], list["pages"][0]["path"]);

    let written = call(
        "kb_write_page",
        json!({"path": "inbox/New idea.md", "content": "# New idea\n\nLinks to [[Stratum]] #idea\n"}),
    );
    assert_eq!(written["title"], "New idea");
    let read = call("kb_get_page", json!({"path": "inbox/New idea.md"}));
    assert_eq!(read["content"], written["content"]);
    assert_eq!(read["modified_at"], written["modified_at"]);

    let found = call(
        "kb_search",
        json!({"query": "compaction tombstones", "limit": 3}),
    );
    assert!(found["total"].as_u64().unwrap() >= 1);
    let tagged = call("kb_search_by_tag", json!({"tag": "idea"}));
    assert!(
        tagged["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["page_path"] == "inbox/New idea.md")
    );
    let n = tagged["total"].as_u64().unwrap();
    assert!(n >= 2, "{tagged}");
    assert_eq!(tagged["next_offset"], Value::Null);
    let first = call("kb_search_by_tag", json!({"tag": "idea", "limit": 1}));
    assert_eq!(
        (first["total"].as_u64(), first["next_offset"].as_u64()),
        (Some(n), Some(1))
    );
    let last = call(
        "kb_search_by_tag",
        json!({"tag": "idea", "limit": 1, "offset": n - 1}),
    );
    assert_eq!(last["results"].as_array().unwrap().len(), 1);
    assert_eq!(last["next_offset"], Value::Null);
    let ac = call("kb_autocomplete", json!({"query": "grace", "kind": "page"}));
    assert_eq!(ac["items"][0]["detail"], "people/Grace Hopper.md");
    call("kb_autocomplete", json!({"query": "cook", "kind": "tag"}));
    let bl = call("kb_backlinks", json!({"path": "projects/Stratum.md"}));
    assert!(
        bl["backlinks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["source_page"] == "inbox/New idea.md"),
        "read-your-writes"
    );
    let g = call(
        "kb_graph",
        json!({"path": "projects/Beacon.md", "depth": 1}),
    );
    assert!(g["node_count"].as_u64().unwrap() > 1);
    call("kb_graph", json!({}));
    let res = call("kb_resolve_link", json!({"target": "DDIA"}));
    assert_eq!(
        res["resolved"]["path"],
        "reading/Designing Data-Intensive Applications.md"
    );
    let unres = call("kb_resolve_link", json!({"target": "Patagonia"}));
    assert_eq!(
        (unres["resolved"].clone(), unres["unresolved"].clone()),
        (Value::Null, json!(true))
    );
    let added = call(
        "kb_add_tag",
        json!({"path": "inbox/New idea.md", "tag": "later"}),
    );
    assert_eq!(
        (added["action"].clone(), added["applied"].clone()),
        (json!("add"), json!(1))
    );
    let removed = call(
        "kb_remove_tag",
        json!({"path": "inbox/New idea.md", "tag": "idea"}),
    );
    assert_eq!(removed["applied"], 1);
    let reindexed = call("kb_reindex", json!({"mode": "rebuild"}));
    assert_eq!(reindexed["total_pages"], 41);
    assert_eq!(reindexed["index_fresh"], true);
    call("kb_reindex", json!({}));
    let deleted = call("kb_delete_page", json!({"path": "inbox/New idea.md"}));
    assert_eq!(deleted, json!({}));
}

#[test]
fn error_codes_reachable_from_each_tool() {
    let dir = example_vault();
    let mut s = Server::start(&dir.path().join("vault"));
    let code = |e: &Value| e["code"].as_i64().unwrap();

    // NotFound (-32001), never fabricated content.
    for (tool, args) in [
        ("kb_get_page", json!({"path": "missing.md"})),
        ("kb_delete_page", json!({"path": "missing.md"})),
        ("kb_backlinks", json!({"path": "missing.md"})),
        ("kb_graph", json!({"path": "missing.md"})),
        ("kb_add_tag", json!({"path": "missing.md", "tag": "x"})),
        ("kb_remove_tag", json!({"path": "missing.md", "tag": "x"})),
    ] {
        let e = s.err(tool, args);
        assert_eq!(
            (code(&e), e["data"]["kind"].as_str()),
            (-32001, Some("NotFound")),
            "{tool}: {e}"
        );
        assert_eq!(e["data"]["note_path"], "missing.md");
    }

    // InvalidArgs (-32602) for a schema violation, on every tool.
    for t in pkm_mcp::tools::TOOLS {
        let e = s.err(t.name, json!({"no_such_argument": 1}));
        assert_eq!(code(&e), -32602, "{}: {e}", t.name);
        assert_eq!(e["data"]["kind"], "InvalidArgs");
    }
    for (tool, args) in [
        ("kb_search", json!({"query": ""})),
        ("kb_search", json!({"query": "x", "limit": 1001})),
        ("kb_list_pages", json!({"limit": 0})),
        ("kb_graph", json!({"depth": 6})),
        ("kb_reindex", json!({"mode": "everything"})),
        ("kb_autocomplete", json!({"query": "x", "kind": "people"})),
        ("kb_add_tag", json!({"path": "Home.md", "tag": "two words"})),
        ("kb_write_page", json!({"path": "a.md"})),
        ("kb_get_page", json!({"path": 7})),
        ("kb_list_pages", json!({"cursor": "not-a-cursor-!!"})),
        (
            "kb_write_page",
            json!({"path": "a.md", "content": "x", "expected_modified": "yesterday"}),
        ),
    ] {
        let e = s.err(tool, args.clone());
        assert_eq!(code(&e), -32602, "{tool} {args}: {e}");
    }

    // Conflict (-32002) with zero mutation.
    let page = s.ok("kb_get_page", json!({"path": "Home.md"}));
    s.ok(
        "kb_write_page",
        json!({"path": "Home.md", "content": "changed", "expected_modified": page["modified_at"]}),
    );
    let e = s.err(
        "kb_write_page",
        json!({"path": "Home.md", "content": "lost?", "expected_modified": page["modified_at"]}),
    );
    assert_eq!(code(&e), -32002);
    let e = s.err(
        "kb_delete_page",
        json!({"path": "Home.md", "expected_modified": page["modified_at"]}),
    );
    assert_eq!(code(&e), -32002);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("vault/Home.md")).unwrap(),
        "changed"
    );

    // Unknown tool (-32601).
    let r = s.request("tools/call", json!({"name": "kb_nope", "arguments": {}}));
    assert_eq!(r["error"]["code"], -32601);
}

#[test]
fn paths_outside_the_vault_are_refused_before_any_io() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    std::fs::write(dir.path().join("outside.md"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path(), vault.join("escape")).unwrap();
    let mut s = Server::start(&vault);
    let bad = [
        "../outside.md",
        "projects/../../outside.md",
        "/etc/passwd",
        &format!("{}/outside.md", dir.path().display()),
        "a\u{0}b.md",
        "projects\\Stratum.md",
        ".pkm/blocks.md",
        ".git/config.md",
        "escape/outside.md",
        "escape/new.md",
        "Home.txt",
        "",
    ];
    for path in bad {
        for (tool, args) in [
            ("kb_get_page", json!({"path": path})),
            ("kb_write_page", json!({"path": path, "content": "pwned"})),
            ("kb_delete_page", json!({"path": path})),
            ("kb_add_tag", json!({"path": path, "tag": "x"})),
            ("kb_remove_tag", json!({"path": path, "tag": "x"})),
            ("kb_backlinks", json!({"path": path})),
            ("kb_graph", json!({"path": path})),
        ] {
            let e = s.err(tool, args);
            assert_eq!(
                (e["code"].as_i64(), e["data"]["kind"].as_str()),
                (Some(-32602), Some("InvalidArgs")),
                "{tool} {path:?}: {e}"
            );
            assert!(
                !e.to_string().contains(&dir.path().display().to_string())
                    || path.contains(&dir.path().display().to_string()),
                "{e}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("outside.md")).unwrap(),
        "secret"
    );
    assert!(!dir.path().join("new.md").exists());
    let r = s.request("resources/read", json!({"uri": "note://../outside.md"}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn concurrent_guarded_writes_to_one_note_let_exactly_one_win() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    let mut s = Server::start(&vault);
    let base = s.ok("kb_get_page", json!({"path": "Glossary.md"}));
    // Six writes in flight at once, all guarded by the same modified_at.
    let ids: Vec<u64> = (0..6)
        .map(|i| {
            let id = 10_000 + i;
            let args = json!({"path": "Glossary.md", "content": format!("writer {i}"), "expected_modified": base["modified_at"]});
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "kb_write_page", "arguments": args}}));
            id
        })
        .collect();
    let mut responses = std::collections::HashMap::new();
    while responses.len() < ids.len() {
        let msg = s.read();
        if let Some(id) = msg["id"].as_u64() {
            responses.insert(id, msg);
        }
    }
    let winners: Vec<u64> = ids
        .iter()
        .copied()
        .filter(|id| responses[id].get("result").is_some())
        .collect();
    assert_eq!(winners.len(), 1, "{responses:?}");
    for r in responses.values() {
        if r.get("error").is_some() {
            assert_eq!(r["error"]["code"], -32002, "{r}");
        }
    }
    let winner = ids.iter().position(|id| *id == winners[0]).unwrap();
    assert_eq!(
        std::fs::read_to_string(vault.join("Glossary.md")).unwrap(),
        format!("writer {winner}")
    );
}

#[test]
fn oversized_notes_are_an_error_that_says_how_to_read_them() {
    let dir = tempfile::tempdir().unwrap();
    let big = format!(
        "# Big\n\n{}\n",
        "lorem ipsum dolor sit amet ".repeat(50_000)
    );
    std::fs::write(dir.path().join("big.md"), &big).unwrap();
    std::fs::write(dir.path().join("big é.md"), &big).unwrap();
    let mut s = Server::start(dir.path());
    let e = s.err("kb_get_page", json!({"path": "big.md"}));
    assert_eq!(e["code"], -32602);
    assert!(
        e["data"]["hint"]
            .as_str()
            .unwrap()
            .contains("note://big.md"),
        "{e}"
    );
    let e = s.err("kb_get_page", json!({"path": "big é.md"}));
    assert!(
        e["data"]["hint"]
            .as_str()
            .unwrap()
            .contains("note://big%20%C3%A9.md"),
        "{e}"
    );
    let r = s.request("resources/read", json!({"uri": "note://big.md"}));
    assert_eq!(
        r["result"]["contents"][0]["text"].as_str().unwrap().len(),
        big.len()
    );
    // Listing waits for the first scan only so long (VaultLocked after); two 1.35 MB notes on a
    // loaded CI machine may take longer, and the warm-up is not what this test is about.
    let ready = std::time::Instant::now();
    while s.ok("kb_index_status", json!({}))["index_fresh"] != json!(true)
        && ready.elapsed() < std::time::Duration::from_secs(120)
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let list = s.request("resources/list", json!({}));
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["note://big%20%C3%A9.md", "note://big.md"]);
}

#[test]
fn resource_uris_are_percent_encoded_and_read_back_decoded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("Plugins")).unwrap();
    let text = "# Palette\n\nOpen it with Ctrl+P.\n";
    std::fs::write(dir.path().join("Plugins/Command palette é.md"), text).unwrap();
    let mut s = Server::start(dir.path());
    let list = s.request("resources/list", json!({}));
    let uri = "note://Plugins/Command%20palette%20%C3%A9.md";
    assert_eq!(list["result"]["resources"][0]["uri"], uri, "{list}");
    assert_eq!(
        list["result"]["resources"][0]["name"],
        "Plugins/Command palette é.md"
    );
    for asked in [
        uri,
        "note://Plugins/Command palette é.md",
        "note://Plugins%2FCommand%20palette%20%c3%a9.md",
    ] {
        let r = s.request("resources/read", json!({"uri": asked}));
        assert_eq!(r["result"]["contents"][0]["text"], text, "{asked}: {r}");
        assert_eq!(r["result"]["contents"][0]["uri"], asked);
    }
    for bad in [
        "note://Plugins/Command%2palette.md",
        "note://Plugins/%FF.md",
        "note://..%2Fescape.md",
    ] {
        let r = s.request("resources/read", json!({"uri": bad}));
        assert_eq!(r["error"]["code"], -32602, "{bad}: {r}");
        assert_eq!(r["error"]["data"]["kind"], "InvalidArgs", "{bad}: {r}");
        let hint = r["error"]["data"]["hint"].as_str().unwrap_or_default();
        assert!(!hint.is_empty() && !hint.contains('\n'), "{bad}: {r}");
    }
}

#[test]
fn integers_out_of_range_for_their_type_are_invalid_args() {
    let vault = example_vault();
    let mut s = Server::start(vault.path());
    for (tool, arg, args) in [
        (
            "kb_search",
            "offset",
            r#"{"query":"a","offset":18446744073709551616}"#,
        ),
        ("kb_search", "offset", r#"{"query":"a","offset":-1}"#),
        ("kb_search", "limit", r#"{"query":"a","limit":1.5}"#),
        ("kb_search_by_tag", "offset", r#"{"tag":"a","offset":1e30}"#),
        ("kb_search_by_tag", "offset", r#"{"tag":"a","offset":3.0}"#),
        (
            "kb_list_pages",
            "limit",
            r#"{"limit":18446744073709551617}"#,
        ),
        ("kb_graph", "depth", r#"{"depth":2.0}"#),
        ("kb_graph", "depth", r#"{"depth":-99999999999999999999}"#),
    ] {
        let r = s.request_raw(
            "tools/call",
            &format!(r#"{{"name":"{tool}","arguments":{args}}}"#),
        );
        assert_eq!(r["error"]["code"], -32602, "{tool} {args}: {r}");
        assert_eq!(
            r["error"]["data"]["kind"], "InvalidArgs",
            "{tool} {args}: {r}"
        );
        let message = r["error"]["message"].as_str().unwrap();
        assert!(!message.contains('\n'), "{message}");
        assert!(
            message.contains(&format!("'{arg}'")),
            "{tool} {args}: {message}"
        );
    }
    // An integer written as one is still accepted.
    let r = s.request_raw(
        "tools/call",
        r#"{"name":"kb_search","arguments":{"query":"a","offset":1,"limit":5}}"#,
    );
    assert!(r["result"]["structuredContent"].is_object(), "{r}");
}

/// Only regular files are notes: a FIFO named like one is listed by nothing, answered at once with
/// an error by every read, and reported as skipped by `stratum-mcp index`. (Were it ever opened
/// blocking, this test would hang.)
#[cfg(unix)]
#[test]
fn a_fifo_named_like_a_note_is_never_opened() {
    let vault = example_vault();
    let made = Command::new("mkfifo")
        .arg(vault.path().join("x.md"))
        .status()
        .unwrap();
    assert!(made.success());

    let out = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
        .args(["index", "--vault"])
        .arg(vault.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("skipped x.md: not a regular file (a FIFO)"),
        "{stderr}"
    );

    let mut s = Server::start(vault.path());
    let list = s.ok("kb_list_pages", json!({"limit": 1000}));
    let pages = list["pages"].as_array().unwrap().clone();
    assert!(!pages.is_empty());
    assert!(pages.iter().all(|p| p["path"] != "x.md"), "{list}");

    for (tool, args) in [
        ("kb_get_page", json!({"path": "x.md"})),
        ("kb_write_page", json!({"path": "x.md", "content": "# x\n"})),
        ("kb_add_tag", json!({"path": "x.md", "tag": "t"})),
        ("kb_remove_tag", json!({"path": "x.md", "tag": "t"})),
    ] {
        let e = s.err(tool, args);
        assert_eq!(e["code"], -32602, "{tool}: {e}");
        let message = e["message"].as_str().unwrap().to_lowercase();
        assert!(message.contains("not a regular file"), "{tool}: {e}");
    }
    let r = s.request("resources/read", json!({"uri": "note://x.md"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // The server still answers, and the FIFO is still there, untouched.
    s.ok("kb_get_page", json!({"path": pages[0]["path"]}));
    let ft = std::fs::symlink_metadata(vault.path().join("x.md"))
        .unwrap()
        .file_type();
    assert!(!ft.is_file());
}

#[test]
fn bad_command_lines_exit_2_with_one_line() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    for args in [
        &["--vault", "/definitely/not/here"][..],
        &["--bogus"],
        &["--stdio"],
        &["--http", "--stdio", "--vault", "."],
    ] {
        let (code, stderr, stdout) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    let (code, stderr, _) = run(&["--vault", file.path().to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("not a directory"), "{stderr}");
    let (code, _, stdout) = run(&["--version"]);
    assert_eq!(
        (code, stdout.trim()),
        (
            Some(0),
            format!("stratum-mcp {}", env!("CARGO_PKG_VERSION")).as_str()
        )
    );
}

#[test]
fn token_cli_prints_only_the_token_and_stores_only_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_stratum-mcp");
    let vault = dir.path().to_str().unwrap();
    let stdout = common::cli(["token", "create", "--vault", vault, "--name", "laptop"]);
    assert_eq!(stdout.lines().count(), 1);
    let token = stdout.as_str();
    assert_eq!(token.len(), 43);
    let store = std::fs::read_to_string(dir.path().join(".pkm/mcp-tokens.json")).unwrap();
    assert!(!store.contains(token));
    let out = Command::new(bin)
        .args(["token", "list", "--vault"])
        .arg(dir.path())
        .output()
        .unwrap();
    let listed = String::from_utf8(out.stdout).unwrap();
    assert!(
        listed.contains("laptop")
            && listed.contains("kb:write")
            && !listed.contains("kb:admin")
            && !listed.contains(token)
    );
    let out = Command::new(bin)
        .args(["token", "create", "--vault"])
        .arg(dir.path())
        .args(["--name", "ro", "--scopes", "kb:read,kb:nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(bin)
        .args(["token", "revoke", "--vault"])
        .arg(dir.path())
        .arg("laptop")
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = Command::new(bin)
        .args(["token", "revoke", "--vault"])
        .arg(dir.path())
        .arg("laptop")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Reads pings until a `notifications/message` whose message starts with `prefix` has arrived.
fn wait_for_log(s: &mut Server, prefix: &str) -> Value {
    for _ in 0..200 {
        let found = s.notifications.iter().find(|n| {
            n["method"] == "notifications/message"
                && n["params"]["data"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(prefix))
        });
        if let Some(n) = found {
            return n.clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
        s.request("ping", json!({}));
    }
    panic!("no log notification {prefix:?}; got {:?}", s.notifications)
}

#[test]
fn stdio_clients_get_warnings_and_rebuild_milestones_as_log_notifications() {
    let dir = example_vault();
    let vault = dir.path().join("vault");
    std::fs::write(vault.join("binary.md"), [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let mut s = Server::start(&vault);

    // The warm-up scan's warning reaches the client even though it happened before initialize.
    let warning = wait_for_log(&mut s, "skipping note");
    assert_eq!(warning["params"]["level"], "warning", "{warning}");
    assert_eq!(warning["params"]["data"]["path"], "binary.md", "{warning}");
    assert_eq!(
        warning["params"]["logger"], "stratum_app::scan",
        "{warning}"
    );

    let r = s.request("logging/setLevel", json!({"level": "notice"}));
    assert_eq!(r["result"], json!({}), "{r}");
    s.ok("kb_reindex", json!({"mode": "rebuild"}));
    let started = wait_for_log(&mut s, "index rebuild started");
    assert_eq!(started["params"]["level"], "notice", "{started}");
    let finished = wait_for_log(&mut s, "index rebuild finished");
    assert_eq!(finished["params"]["data"]["skipped"], 1, "{finished}");

    // Above the client's level, nothing is sent.
    let r = s.request("logging/setLevel", json!({"level": "error"}));
    assert_eq!(r["result"], json!({}), "{r}");
    s.notifications.clear();
    s.ok("kb_reindex", json!({"mode": "rebuild"}));
    std::thread::sleep(std::time::Duration::from_millis(500));
    s.request("ping", json!({}));
    assert!(s.notifications.is_empty(), "{:?}", s.notifications);

    // rmcp decodes the params before our handler runs and answers an unknown level itself.
    let r = s.request("logging/setLevel", json!({"level": "loud"}));
    assert!(r.get("error").is_some(), "{r}");
}
