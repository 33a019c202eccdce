//! Scopes over HTTP (contract §7.2, §7.3): for every tool of the table, a token lacking the tool's
//! scope gets HTTP 403 with ScopesDenied (-32005) and nothing changes on disk, and a token holding
//! only that scope gets past the check.

// Test code, helpers included: a failed step should stop the test where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{TestServer, example_vault, snapshot};
use pkm_mcp::scope::Scope;
use pkm_mcp::tools::{TOOLS, Tool};
use serde_json::{Map, Value, json};

/// A note of the example vault, for every `path` argument.
const NOTE: &str = "Home.md";

/// Minimal valid arguments for a tool: its schema's required fields, each given the simplest value
/// its declared type and constraints accept.
fn minimal_args(tool: &Tool) -> Value {
    let schema: Value = serde_json::from_str(tool.input_schema).unwrap();
    let mut args = Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap();
        let prop = &schema["properties"][name];
        let value = if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
            first.clone()
        } else {
            let ty = match &prop["type"] {
                Value::Array(types) => types
                    .iter()
                    .find(|t| *t != "null")
                    .cloned()
                    .unwrap_or(Value::Null),
                t => t.clone(),
            };
            match ty.as_str() {
                Some("string") if name == "path" => json!(NOTE),
                Some("string") if name == "content" => json!("# Scoped\n"),
                Some("string") if name == "section" => json!("Home#Work"),
                Some("array") if name == "edits" => json!([{"op": "append", "text": "scoped"}]),
                // Fits every tag pattern and minLength of the schemas.
                Some("string") => json!("scoped"),
                Some("integer") | Some("number") => {
                    prop.get("minimum").cloned().unwrap_or(json!(1))
                }
                Some("boolean") => json!(false),
                other => panic!(
                    "{}: no minimal value for {name} of type {other:?}",
                    tool.name
                ),
            }
        };
        args.insert(name.to_owned(), value);
    }
    // A tool that needs one of its optional arguments (the schema cannot say so without a
    // top-level `anyOf`, which some clients refuse): that argument, at its smallest.
    if tool.name == "kb_set_properties" {
        args.insert("remove".to_owned(), json!(["scoped"]));
    }
    // A move needs a note that exists and a free target; a dry run keeps the vault as it is.
    if tool.name == "kb_move_page" {
        args.insert("from".to_owned(), json!(NOTE));
        args.insert("to".to_owned(), json!("moved/scoped.md"));
        args.insert("dry_run".to_owned(), json!(true));
    }
    Value::Object(args)
}

#[tokio::test]
async fn every_tool_checks_its_scope_before_touching_the_vault() {
    let s = TestServer::start(&example_vault()).await;
    let before = snapshot(&s.vault);
    for tool in TOOLS {
        let others: Vec<Scope> = Scope::ALL
            .into_iter()
            .filter(|sc| *sc != tool.scope)
            .collect();
        let token = s.token_with(&format!("without-{}", tool.name.replace('_', "-")), &others);
        let session = s.initialize(Some(&token)).await;
        let r = s
            .call(&token, &session, tool.name, minimal_args(tool))
            .await;
        assert_eq!(r.status, 403, "{}: {}", tool.name, r.json);
        assert_eq!(r.error_code(), Some(-32005), "{}", tool.name);
        assert_eq!(r.json["error"]["data"]["kind"], "ScopesDenied");
        assert!(
            r.json["error"]["message"]
                .as_str()
                .unwrap()
                .contains(tool.scope.as_str()),
            "{}",
            r.json
        );
    }
    assert_eq!(
        snapshot(&s.vault),
        before,
        "a denied call changed the vault"
    );
}

#[tokio::test]
async fn a_token_with_only_the_tools_scope_gets_through() {
    let s = TestServer::start(&example_vault()).await;
    for tool in TOOLS {
        let token = s.token_with(
            &format!("only-{}", tool.name.replace('_', "-")),
            &[tool.scope],
        );
        let session = s.initialize(Some(&token)).await;
        let r = s
            .call(&token, &session, tool.name, minimal_args(tool))
            .await;
        assert_ne!(r.status, 403, "{}: {}", tool.name, r.json);
        assert_ne!(r.error_code(), Some(-32005), "{}: {}", tool.name, r.json);
        assert_ne!(
            r.error_code(),
            Some(-32602),
            "{}: the minimal arguments must be valid: {}",
            tool.name,
            r.json
        );
    }
}

#[tokio::test]
async fn resources_need_the_read_scope() {
    let s = TestServer::start(&example_vault()).await;
    let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": format!("note://{NOTE}")}});
    let writer = s.token_with("writer", &[Scope::Write]);
    let session = s.initialize(Some(&writer)).await;
    let r = s.post(&read, Some(&writer), Some(&session)).await;
    assert_eq!(
        (r.status, r.error_code()),
        (403, Some(-32005)),
        "{}",
        r.json
    );
    // Listing the notes needs it too, as kb_list_pages does (the method table says so once).
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"});
    let r = s.post(&list, Some(&writer), Some(&session)).await;
    assert_eq!(
        (r.status, r.error_code()),
        (403, Some(-32005)),
        "{}",
        r.json
    );

    let reader = s.token_with("reader", &[Scope::Read]);
    let session = s.initialize(Some(&reader)).await;
    let r = s.post(&read, Some(&reader), Some(&session)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    let on_disk = std::fs::read_to_string(s.vault.join(NOTE)).unwrap();
    assert_eq!(r.json["result"]["contents"][0]["text"], on_disk.as_str());
    let r = s.post(&list, Some(&reader), Some(&session)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert!(
        r.json["result"]["resources"]
            .as_array()
            .is_some_and(|l| !l.is_empty())
    );
}

#[tokio::test]
async fn a_denied_entry_makes_a_batch_403_and_the_rest_still_run() {
    let s = TestServer::start(&example_vault()).await;
    let reader = s.token_with("reader", &[Scope::Read]);
    let session = s.initialize(Some(&reader)).await;
    let write = TOOLS.iter().find(|t| t.scope == Scope::Write).unwrap();
    let read = TOOLS.iter().find(|t| t.scope == Scope::Read).unwrap();
    let batch = json!([
        common::call_request(1, read.name, minimal_args(read)),
        common::call_request(2, write.name, minimal_args(write))
    ]);
    let before = snapshot(&s.vault);
    let r = s.post(&batch, Some(&reader), Some(&session)).await;
    assert_eq!(r.status, 403, "{}", r.json);
    assert!(r.json[0]["result"].is_object(), "{}", r.json);
    assert_eq!(r.json[1]["error"]["code"], -32005);
    assert_eq!(snapshot(&s.vault), before);
}

/// The names `tools/list` shows `token`.
async fn listed(s: &TestServer, token: &str) -> Vec<String> {
    let session = s.initialize(Some(token)).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = s.post(&list, Some(token), Some(&session)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    r.json["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn tools_list_shows_a_token_only_the_tools_its_scopes_allow() {
    let s = TestServer::start(&example_vault()).await;
    let reader = s.token_with("list-reader", &[Scope::Read]);
    let expected: Vec<&str> = TOOLS
        .iter()
        .filter(|t| t.scope == Scope::Read)
        .map(|t| t.name)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(listed(&s, &reader).await, expected);

    // What is not listed is still refused.
    let session = s.initialize(Some(&reader)).await;
    let write = TOOLS.iter().find(|t| t.scope == Scope::Write).unwrap();
    let r = s
        .call(&reader, &session, write.name, minimal_args(write))
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (403, Some(-32005)),
        "{}",
        r.json
    );

    let full = s.token_with("list-full", &Scope::ALL);
    let all: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    // The contract's fifteen and the extensions (ADR-0016, ADR-0017, ADR-0019).
    assert_eq!(all.len(), 22);
    assert_eq!(listed(&s, &full).await, all);
}
