//! The Streamable HTTP door over a real socket (ADR-0013 "HTTP security" and "Streamable
//! HTTP behaviour"): sessions, tokens, framing, status codes, Host/Origin checks, /health, TLS and
//! the flag rules of `--http`.

// Test code, helpers included: a failed step should stop the test where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use clap::Parser;
use common::{Options, TestServer, call_request, example_vault, initialize_request};
use pkm_mcp::cli::Cli;
use pkm_mcp::http::{self, BODY_MAX_BYTES, HttpConfig};
use pkm_mcp::tools::TOOLS;
use serde_json::{Value, json};

fn ping(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

#[tokio::test]
async fn initialize_opens_a_session_without_a_token() {
    let s = TestServer::start(&example_vault()).await;
    let r = s.post(&initialize_request(), None, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json["id"], 0);
    assert_eq!(r.json["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(r.json["result"]["serverInfo"]["name"], "stratum-mcp");
    assert_eq!(
        r.json["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        r.json["result"]["capabilities"]["tools"]["listChanged"],
        false
    );
    let id = r.header("mcp-session-id").unwrap();
    let uuid = uuid::Uuid::parse_str(id).unwrap();
    assert_eq!(uuid.get_version_num(), 4);

    // A session opened without a token serves any valid token; the tool list is the table.
    let r = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            Some(&s.token),
            Some(id),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let names: Vec<&str> = r.json["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOLS.iter().map(|t| t.name).collect::<Vec<_>>());
    let second = s.initialize(None).await;
    assert_ne!(second, id, "every initialize opens its own session");
}

#[tokio::test]
async fn later_requests_need_a_live_session_of_their_token() {
    let s = TestServer::start(&example_vault()).await;
    let other = s.token_with("other", &pkm_mcp::scope::Scope::PERSONAL);
    let session = s.initialize(Some(&s.token)).await;

    let missing = s.post(&ping(1), Some(&s.token), None).await;
    assert_eq!(missing.status, 400, "{}", missing.json);
    assert_eq!(missing.json["id"], 1);
    assert!(
        missing.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Session-Id")
    );

    let unknown = s
        .post(
            &ping(1),
            Some(&s.token),
            Some(&uuid::Uuid::new_v4().to_string()),
        )
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        s.post(&ping(1), Some(&s.token), Some("not a uuid"))
            .await
            .status,
        404
    );

    let foreign = s.post(&ping(1), Some(&other), Some(&session)).await;
    assert_eq!(
        foreign.status, 404,
        "a session bound to one token refuses another"
    );

    let ok = s.post(&ping(1), Some(&s.token), Some(&session)).await;
    assert_eq!((ok.status, &ok.json["result"]), (200, &json!({})));

    // DELETE ends it; afterwards the id is unknown.
    let del = |id: Option<&str>| {
        let mut req = s.client.delete(s.url("/mcp")).bearer_auth(&s.token);
        if let Some(id) = id {
            req = req.header("mcp-session-id", id);
        }
        s.send(req)
    };
    assert_eq!(del(None).await.status, 400);
    assert_eq!(del(Some(&session)).await.status, 204);
    assert_eq!(
        s.post(&ping(1), Some(&s.token), Some(&session))
            .await
            .status,
        404
    );
    assert_eq!(del(Some(&session)).await.status, 404);
}

#[tokio::test]
async fn tool_calls_need_a_valid_token() {
    let s = TestServer::start(&example_vault()).await;
    let session = s.initialize(None).await;
    let call = call_request(7, "kb_vault_info", json!({}));

    for token in [None, Some("not-a-token")] {
        let r = s.post(&call, token, Some(&session)).await;
        assert_eq!(r.status, 401, "{token:?}: {}", r.json);
        assert_eq!(r.json["id"], 7);
        assert_eq!(r.error_code(), Some(-32600));
        assert_eq!(r.json["error"]["data"]["kind"], "Unauthenticated");
        assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    }
    // Without a session too: the missing token is the first thing said.
    assert_eq!(s.post(&call, None, None).await.status, 401);

    // Both schemes of ADR-0013 "HTTP security" are accepted.
    let bearer = s.post(&call, Some(&s.token), Some(&session)).await;
    assert_eq!(bearer.status, 200, "{}", bearer.json);
    assert!(
        bearer.json["result"]["structuredContent"]["page_count"]
            .as_u64()
            .unwrap()
            > 0
    );
    let auth = format!("Stratum-MCP {}", s.token);
    let r = s
        .post_bytes(
            serde_json::to_vec(&call).unwrap(),
            &[("authorization", &auth), ("mcp-session-id", &session)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);

    // Revocation applies to the next request of the running server.
    s.store.revoke("test").unwrap();
    assert_eq!(
        s.post(&call, Some(&s.token), Some(&session)).await.status,
        401
    );
}

#[tokio::test]
async fn tool_errors_travel_with_200_and_reveal_no_paths() {
    let s = TestServer::start(&example_vault()).await;
    let session = s.initialize(Some(&s.token)).await;
    let r = s
        .call(&s.token, &session, "kb_no_such_tool", json!({}))
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (200, Some(-32601)),
        "{}",
        r.json
    );

    let r = s
        .call(
            &s.token,
            &session,
            "kb_get_page",
            json!({"path": "nowhere/missing.md"}),
        )
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (200, Some(-32001)),
        "{}",
        r.json
    );
    assert_eq!(r.json["error"]["data"]["note_path"], "nowhere/missing.md");
    let r = s
        .call(
            &s.token,
            &session,
            "kb_get_page",
            json!({"path": "../escape.md"}),
        )
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (200, Some(-32602)),
        "{}",
        r.json
    );
    let r = s.call(&s.token, &session, "kb_get_page", json!({})).await;
    assert_eq!(
        (r.status, r.error_code()),
        (200, Some(-32602)),
        "{}",
        r.json
    );
    let text = r.json.to_string();
    let root = s._tmp.path().to_str().unwrap();
    assert!(
        !text.contains(root),
        "an error leaked the vault's location: {text}"
    );
}

#[tokio::test]
async fn a_write_reads_back_byte_for_byte() {
    let s = TestServer::start(&example_vault()).await;
    let session = s.initialize(Some(&s.token)).await;
    let content = "---\ntags: [http]\n---\n# Über HTTP\n\nWritten over [[Home]].\n";
    let w = s
        .call(
            &s.token,
            &session,
            "kb_write_page",
            json!({"path": "inbox/Over HTTP.md", "content": content}),
        )
        .await;
    assert_eq!(w.status, 200, "{}", w.json);
    let r = s
        .call(
            &s.token,
            &session,
            "kb_get_page",
            json!({"path": "inbox/Over HTTP.md"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let doc = &r.json["result"]["structuredContent"];
    assert_eq!(doc["content"], content);
    assert_eq!(r.json["result"]["content"][0]["type"], "text");
    assert_eq!(
        serde_json::from_str::<Value>(r.json["result"]["content"][0]["text"].as_str().unwrap())
            .unwrap(),
        *doc
    );
    assert_eq!(
        std::fs::read_to_string(s.vault.join("inbox/Over HTTP.md")).unwrap(),
        content
    );
}

#[tokio::test]
async fn framing_errors_get_their_statuses() {
    let s = TestServer::start(&example_vault()).await;
    let session = s.initialize(Some(&s.token)).await;
    let auth = format!("Bearer {}", s.token);
    let h = [
        ("authorization", auth.as_str()),
        ("mcp-session-id", session.as_str()),
    ];

    let get = s
        .send(
            s.client
                .get(s.url("/mcp"))
                .bearer_auth(&s.token)
                .header("mcp-session-id", &session),
        )
        .await;
    assert_eq!(get.status, 405);

    let parse = s
        .post_bytes(b"{\"jsonrpc\": \"2.0\", \"id\": 1, ".to_vec(), &h)
        .await;
    assert_eq!(
        (parse.status, parse.error_code()),
        (400, Some(-32700)),
        "{}",
        parse.json
    );
    assert_eq!(parse.json["id"], Value::Null);

    let invalid = s
        .post(
            &json!({"jsonrpc": "2.0", "id": 4, "params": {}}),
            Some(&s.token),
            Some(&session),
        )
        .await;
    assert_eq!(
        (invalid.status, invalid.error_code()),
        (400, Some(-32600)),
        "{}",
        invalid.json
    );
    assert_eq!(invalid.json["id"], 4);
    assert_eq!(
        s.post(&json!([]), Some(&s.token), Some(&session))
            .await
            .status,
        400
    );
    assert_eq!(
        s.post(&json!("ping"), Some(&s.token), Some(&session))
            .await
            .status,
        400
    );

    let text = s
        .send(
            s.client
                .post(s.url("/mcp"))
                .bearer_auth(&s.token)
                .header("content-type", "text/plain")
                .body(ping(1).to_string()),
        )
        .await;
    assert_eq!(text.status, 415);

    let old = s
        .post_bytes(
            ping(1).to_string().into_bytes(),
            &[h[0], h[1], ("mcp-protocol-version", "1999-01-01")],
        )
        .await;
    assert_eq!(old.status, 400);
    let current = s
        .post_bytes(
            ping(1).to_string().into_bytes(),
            &[h[0], h[1], ("mcp-protocol-version", "2025-06-18")],
        )
        .await;
    assert_eq!(current.status, 200);
    let previous = s
        .post_bytes(
            ping(1).to_string().into_bytes(),
            &[h[0], h[1], ("mcp-protocol-version", "2025-03-26")],
        )
        .await;
    assert_eq!(previous.status, 200);
}

#[tokio::test]
async fn bodies_over_two_mib_get_413() {
    let s = TestServer::start(&example_vault()).await;
    let session = s.initialize(Some(&s.token)).await;
    let auth = format!("Bearer {}", s.token);
    let h = [
        ("authorization", auth.as_str()),
        ("mcp-session-id", session.as_str()),
    ];

    // Exactly at the limit is accepted (a ping padded with whitespace).
    let mut at_limit = ping(1).to_string().into_bytes();
    at_limit.resize(BODY_MAX_BYTES, b' ');
    let r = s.post_bytes(at_limit, &h).await;
    assert_eq!(r.status, 200, "{}", r.json);

    let mut over = ping(1).to_string().into_bytes();
    over.resize(BODY_MAX_BYTES + 1, b' ');
    let r = s.post_bytes(over, &h).await;
    assert_eq!(r.status, 413);
    assert!(r.json["error"].is_object());
}

#[tokio::test]
async fn batches_answer_in_order_and_notifications_get_202() {
    let s = TestServer::start(&example_vault()).await;
    let session = s.initialize(Some(&s.token)).await;
    let batch = json!([
        ping(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        call_request(3, "kb_no_such_tool", json!({})),
        {"jsonrpc": "2.0", "id": 4},
        call_request(5, "kb_index_status", json!({}))
    ]);
    let r = s.post(&batch, Some(&s.token), Some(&session)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    let entries = r.json.as_array().unwrap();
    let ids: Vec<&Value> = entries.iter().map(|e| &e["id"]).collect();
    assert_eq!(
        ids,
        [&json!(1), &json!("two"), &json!(3), &json!(4), &json!(5)]
    );
    assert!(entries[1]["result"]["tools"].is_array());
    assert_eq!(entries[2]["error"]["code"], -32601);
    assert_eq!(entries[3]["error"]["code"], -32600);
    assert!(
        entries[4]["result"]["structuredContent"].is_object(),
        "{}",
        entries[4]
    );

    let only_notifications = json!([
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    ]);
    let r = s
        .post(&only_notifications, Some(&s.token), Some(&session))
        .await;
    assert_eq!((r.status, &r.json), (202, &Value::Null));
    let r = s
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Some(&s.token),
            Some(&session),
        )
        .await;
    assert_eq!((r.status, &r.json), (202, &Value::Null));
}

#[tokio::test]
async fn health_needs_no_token() {
    let s = TestServer::start(&example_vault()).await;
    let r = s.send(s.client.get(s.url("/health"))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json["status"], "ok");
    assert_eq!(r.json["store"], "ok");
    assert!(r.json["index_fresh"].is_boolean());
    assert_eq!(r.json["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_first() {
    let opts = Options {
        config: HttpConfig {
            allowed_hosts: vec!["kb.example.org".into()],
            allowed_origins: vec!["https://app.example.org".into()],
            ..HttpConfig::default()
        },
        ..Options::default()
    };
    let s = TestServer::start_with(&example_vault(), opts).await;
    let body = initialize_request().to_string();
    let post = |headers: &[(&str, &str)]| {
        let mut req = s
            .client
            .post(s.url("/mcp"))
            .header("content-type", "application/json")
            .body(body.clone());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        s.send(req)
    };
    let r = post(&[("host", "evil.example.com")]).await;
    assert_eq!(r.status, 403);
    assert!(
        r.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Host")
    );
    assert_eq!(
        post(&[("host", "localhost.evil.example.com:8787")])
            .await
            .status,
        403
    );
    assert_eq!(
        s.send(
            s.client
                .get(s.url("/health"))
                .header("host", "evil.example.com")
        )
        .await
        .status,
        403
    );
    // Before the body is even looked at.
    let r = s
        .send(
            s.client
                .post(s.url("/mcp"))
                .header("host", "evil.example.com")
                .body("not json"),
        )
        .await;
    assert_eq!(r.status, 403);

    assert_eq!(post(&[("host", "kb.example.org")]).await.status, 200);
    assert_eq!(
        post(&[("host", format!("localhost:{}", s.addr.port()).as_str())])
            .await
            .status,
        200
    );

    let r = post(&[("origin", "https://evil.example.com")]).await;
    assert_eq!(r.status, 403);
    assert!(
        r.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Origin")
    );
    assert_eq!(post(&[("origin", "null")]).await.status, 403);
    assert_eq!(
        post(&[("origin", "https://app.example.org")]).await.status,
        200
    );
    assert_eq!(
        post(&[(
            "origin",
            format!("http://localhost:{}", s.addr.port()).as_str()
        )])
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn without_auth_no_token_or_session_is_needed() {
    let s = TestServer::start_with(
        &example_vault(),
        Options {
            auth: false,
            ..Options::default()
        },
    )
    .await;
    let r = s
        .post(&call_request(1, "kb_vault_info", json!({})), None, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert!(r.json["result"]["structuredContent"].is_object());
}

#[tokio::test]
async fn tls_serves_https_with_the_given_certificate() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;

    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let tls = http::tls::server_config(&cert_path, &key_path).unwrap();
    assert!(
        http::tls::server_config(&key_path, &cert_path).is_err(),
        "swapped files are refused"
    );
    let s = TestServer::start_with(
        &example_vault(),
        Options {
            tls: Some(tls),
            ..Options::default()
        },
    )
    .await;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut stream = connector.connect(name, tcp).await.unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"status\":\"ok\""), "{response}");

    // Plain HTTP to the TLS port gets no answer.
    assert!(s.client.get(s.url("/health")).send().await.is_err());
}

fn flags(args: &[&str]) -> Result<(), String> {
    let cli =
        Cli::try_parse_from(std::iter::once("stratum-mcp").chain(args.iter().copied())).unwrap();
    pkm_mcp::cli::check_flags(&cli.serve)
}

#[test]
fn flag_rules_of_http_security() {
    assert!(flags(&["--http", "--bind", "127.0.0.1:0", "--no-auth"]).is_ok());
    assert!(flags(&["--http", "--bind", "[::1]:8787", "--no-auth"]).is_ok());
    assert!(flags(&["--http", "--bind", "127.0.0.1:8787"]).is_ok());

    let e = flags(&[
        "--http",
        "--bind",
        "0.0.0.0:8787",
        "--no-auth",
        "--behind-tls-proxy",
    ])
    .unwrap_err();
    assert!(e.contains("--no-auth"), "{e}");
    let e = flags(&["--http", "--bind", "0.0.0.0:8787"]).unwrap_err();
    assert!(e.contains("TLS"), "{e}");
    assert!(!e.contains('\n'));
    assert!(flags(&["--http", "--bind", "0.0.0.0:8787", "--behind-tls-proxy"]).is_ok());
    assert!(
        flags(&[
            "--http",
            "--bind",
            "0.0.0.0:8787",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem"
        ])
        .is_ok()
    );
    assert!(flags(&["--http", "--base", "/a b"]).is_err());
    assert!(flags(&["--http", "--base", "/kb"]).is_ok());
}

#[tokio::test]
async fn base_prefix_moves_both_endpoints() {
    let opts = Options {
        config: HttpConfig {
            base: "/kb/".into(),
            ..HttpConfig::default()
        },
        ..Options::default()
    };
    let s = TestServer::start_with(&example_vault(), opts).await;
    assert_eq!(s.send(s.client.get(s.url("/kb/health"))).await.status, 200);
    assert_eq!(s.send(s.client.get(s.url("/health"))).await.status, 404);
    let r = s
        .send(
            s.client
                .post(s.url("/kb/mcp"))
                .header("content-type", "application/json")
                .body(initialize_request().to_string()),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(r.header("mcp-session-id").is_some());
}
