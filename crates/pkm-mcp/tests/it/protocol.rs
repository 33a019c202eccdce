//! Protocol revisions (issue #16): both doors negotiate 2025-11-25, 2025-06-18 and 2025-03-26
//! through the one router, and answer each revision in its own shape: 2025-06-18 exactly as
//! before, 2025-11-25 with tool titles and icons and refused arguments as `isError` results.

use serde_json::{Value, json};

use crate::common::stdio::Server;
use crate::common::{Options, TestServer, example_vault, temp_example_vault};

/// (asked for, agreed on): a revision the server speaks is echoed, any other gets the newest.
const NEGOTIATIONS: [(&str, &str); 5] = [
    ("2025-11-25", "2025-11-25"),
    ("2025-06-18", "2025-06-18"),
    ("2025-03-26", "2025-03-26"),
    ("2024-11-05", "2025-11-25"),
    ("2026-07-28", "2025-11-25"),
];

/// What one client saw after its `initialize`, whichever the door.
struct Seen {
    init: Value,
    tools_list: Value,
    /// `tools/call` of kb_get_page with a path that is not a string (refused by its schema).
    bad_args: Value,
    /// `tools/call` of a tool that does not exist.
    unknown_tool: Value,
}

fn bad_args_call() -> Value {
    json!({"name": "kb_get_page", "arguments": {"path": 5}})
}

fn unknown_tool_call() -> Value {
    json!({"name": "kb_nothing", "arguments": {}})
}

/// The shape a client that agreed on `agreed` relies on.
fn assert_answered_in(agreed: &str, seen: &Seen) {
    let init = &seen.init["result"];
    assert_eq!(init["protocolVersion"], agreed, "{}", seen.init);
    assert_eq!(init["serverInfo"]["name"], "stratum-mcp");
    let newest = agreed == "2025-11-25";

    let tools = seen.tools_list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 22, "{}", seen.tools_list);
    for tool in tools {
        let mut keys: Vec<&str> = tool
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        if newest {
            assert_eq!(
                keys,
                [
                    "annotations",
                    "description",
                    "icons",
                    "inputSchema",
                    "name",
                    "outputSchema",
                    "title"
                ]
            );
            assert!(
                tool["title"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty() && !t.starts_with("kb_"))
            );
            let icon = &tool["icons"][0];
            assert_eq!(icon["mimeType"], "image/svg+xml");
            assert!(
                icon["src"]
                    .as_str()
                    .unwrap()
                    .starts_with("data:image/svg+xml;base64,")
            );
        } else {
            // Exactly what a 2025-06-18 client saw before 2025-11-25 was spoken.
            assert_eq!(
                keys,
                [
                    "annotations",
                    "description",
                    "inputSchema",
                    "name",
                    "outputSchema"
                ]
            );
        }
    }
    assert_eq!(init["serverInfo"].get("icons").is_some(), newest, "{init}");

    if newest {
        // SEP-1303: the model gets the refusal as a tool result it can read and correct.
        let result = &seen.bad_args["result"];
        assert_eq!(result["isError"], true, "{}", seen.bad_args);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("InvalidArgs") && text.contains("path"),
            "{text}"
        );
        assert!(result.get("structuredContent").is_none(), "{result}");
    } else {
        assert_eq!(seen.bad_args["error"]["code"], -32602, "{}", seen.bad_args);
        assert_eq!(seen.bad_args["error"]["data"]["kind"], "InvalidArgs");
    }
    // An unknown tool is a protocol error in every revision.
    assert_eq!(
        seen.unknown_tool["error"]["code"], -32601,
        "{}",
        seen.unknown_tool
    );
}

fn over_stdio(asked: &str) -> Seen {
    let dir = temp_example_vault();
    let (mut s, init) = Server::start_asking(Server::command(&dir.path().join("vault")), asked);
    // The first call may meet the warm-up (VaultLocked); `call` waits it out.
    let _ = s.call("kb_vault_info", json!({}));
    Seen {
        init,
        tools_list: s.request("tools/list", json!({})),
        bad_args: s.request("tools/call", bad_args_call()),
        unknown_tool: s.request("tools/call", unknown_tool_call()),
    }
}

async fn over_http(server: &TestServer, asked: &str) -> Seen {
    let init = server
        .post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
            }}),
            None,
            None,
        )
        .await;
    assert_eq!(init.status, 200, "{}", init.json);
    let session = init.header("mcp-session-id").unwrap().to_owned();
    // No MCP-Protocol-Version header: the session remembers what initialize agreed on.
    let request = |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let tools_list = server
        .post(&request(1, "tools/list", json!({})), None, Some(&session))
        .await;
    let bad_args = server
        .post(
            &request(2, "tools/call", bad_args_call()),
            None,
            Some(&session),
        )
        .await;
    let unknown = server
        .post(
            &request(3, "tools/call", unknown_tool_call()),
            None,
            Some(&session),
        )
        .await;
    Seen {
        init: init.json,
        tools_list: tools_list.json,
        bad_args: bad_args.json,
        unknown_tool: unknown.json,
    }
}

#[test]
fn stdio_negotiates_each_revision_and_answers_in_its_shape() {
    for (asked, agreed) in NEGOTIATIONS {
        assert_answered_in(agreed, &over_stdio(asked));
    }
}

#[tokio::test]
async fn http_negotiates_each_revision_and_answers_as_stdio_does() {
    let server = TestServer::start_with(
        &example_vault(),
        Options {
            auth: false,
            ..Options::default()
        },
    )
    .await;
    for (asked, agreed) in NEGOTIATIONS {
        let http = over_http(&server, asked).await;
        assert_answered_in(agreed, &http);
        // One router: both doors give the same answers, field for field.
        let stdio = tokio::task::spawn_blocking(move || over_stdio(asked))
            .await
            .unwrap();
        assert_eq!(
            http.init["result"], stdio.init["result"],
            "initialize, {asked}"
        );
        assert_eq!(
            http.tools_list["result"], stdio.tools_list["result"],
            "tools/list, {asked}"
        );
        assert_eq!(
            http.bad_args.get("result"),
            stdio.bad_args.get("result"),
            "{asked}"
        );
        assert_eq!(
            http.bad_args.get("error"),
            stdio.bad_args.get("error"),
            "{asked}"
        );
        assert_eq!(
            http.unknown_tool["error"], stdio.unknown_tool["error"],
            "{asked}"
        );
    }
}

#[tokio::test]
async fn the_protocol_header_picks_the_revision_and_without_it_2025_03_26_is_assumed() {
    let server = TestServer::start_with(
        &example_vault(),
        Options {
            auth: false,
            ..Options::default()
        },
    )
    .await;
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": bad_args_call()});
    let body = serde_json::to_vec(&call).unwrap();
    // Sessionless, no header: the specification's default for clients before the header.
    let r = server.post_bytes(body.clone(), &[]).await;
    assert_eq!(r.error_code(), Some(-32602), "{}", r.json);
    let r = server
        .post_bytes(body.clone(), &[("mcp-protocol-version", "2025-11-25")])
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["result"]["isError"], true, "{}", r.json);
    let r = server
        .post_bytes(body, &[("mcp-protocol-version", "2025-06-18")])
        .await;
    assert_eq!(r.error_code(), Some(-32602), "{}", r.json);
}
