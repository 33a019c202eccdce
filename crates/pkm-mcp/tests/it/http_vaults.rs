//! Several vaults in one `stratum-mcp --http` (issue #17, ADR-0013 "Command line"):
//! each vault at `<base>/<name>/mcp` with the same tools, its own notes and sessions, one token
//! store whose tokens may be confined to some vaults (403 elsewhere), `/health` over all of them.
//! Driven through the real binary.

use std::path::Path;
use std::process::{Child, Command};

use serde_json::{Value, json};

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_stratum-mcp");

struct Server {
    child: Child,
    base: String,
    client: reqwest::blocking::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        common::terminate(&mut self.child);
    }
}

/// What a POST answered: status, session header, body.
struct Answer {
    status: u16,
    session: Option<String>,
    json: Value,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut cmd = Command::new(BIN);
        cmd.args(["--http", "--bind", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "warn");
        let (child, base) = common::spawn_http(cmd);
        Server {
            child,
            base,
            client: reqwest::blocking::Client::new(),
        }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    fn post(&self, path: &str, token: &str, session: Option<&str>, body: &Value) -> Answer {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(body);
        if let Some(s) = session {
            req = req.header("Mcp-Session-Id", s);
        }
        let r = req.send().unwrap();
        let status = r.status().as_u16();
        let session = r
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        Answer {
            status,
            session,
            json: r.json().unwrap_or(Value::Null),
        }
    }

    /// `initialize` on `path` as `token`; the session id.
    fn open(&self, path: &str, token: &str) -> String {
        let a = self.post(path, token, None, &common::initialize_request());
        assert_eq!(a.status, 200, "initialize on {path}: {}", a.json);
        a.session.expect("initialize answers with Mcp-Session-Id")
    }

    fn call(&self, path: &str, token: &str, session: &str, tool: &str, args: Value) -> Answer {
        self.post(
            path,
            token,
            Some(session),
            &common::call_request(1, tool, args),
        )
    }
}

/// `stratum-mcp token create`; the token.
fn token(args: &[&str]) -> String {
    common::cli(["token", "create"].iter().chain(args))
}

fn note(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

fn paths_found(a: &Answer) -> Vec<String> {
    a.json["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("search failed: {}", a.json))
        .iter()
        .map(|h| h["page_path"].as_str().unwrap().to_owned())
        .collect()
}

fn tool_names(a: &Answer) -> Vec<String> {
    a.json["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list failed: {}", a.json))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn one_server_serves_two_vaults_and_keeps_tokens_to_theirs() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let (work, home) = (dir.path().join("work"), dir.path().join("home"));
    note(
        &work,
        "Plan.md",
        "# Plan\n\n- llamas graze the quarterly roadmap\n",
    );
    note(&home, "Garden.md", "# Garden\n\n- otters visit the pond\n");
    let store = dir.path().join("tokens.json");
    let store_arg = store.to_str().unwrap();
    let work_arg = format!("work={}", work.display());
    let home_arg = format!("home={}", home.display());
    let every = token(&[
        "--vault",
        &work.display().to_string(),
        "--token-store",
        store_arg,
        "--name",
        "every",
    ]);
    let work_only = token(&[
        "--vault",
        &work.display().to_string(),
        "--token-store",
        store_arg,
        "--name",
        "work-only",
        "--vault-access",
        "work",
    ]);
    let s = Server::start(&[
        "--vault",
        &work_arg,
        "--vault",
        &home_arg,
        "--token-store",
        store_arg,
    ]);

    // /health covers each vault and the whole; each vault has its own.
    let (status, health) = s.get("/health");
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], "ok");
    for v in ["work", "home"] {
        assert_eq!(health["vaults"][v]["status"], "ok", "{health}");
        let (status, one) = s.get(&format!("/{v}/health"));
        assert_eq!((status, &one["store"]), (200, &json!("ok")), "{one}");
    }
    assert_eq!(s.get("/mcp").0, 404, "no vault is served without its name");

    // The same tools on each (the contract's fifteen and the extensions), over each vault's own
    // notes.
    let ws = s.open("/work/mcp", &every);
    let hs = s.open("/home/mcp", &every);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let work_tools = tool_names(&s.post("/work/mcp", &every, Some(&ws), &list));
    assert_eq!(work_tools.len(), 22);
    assert_eq!(
        work_tools,
        tool_names(&s.post("/home/mcp", &every, Some(&hs), &list))
    );
    let search = |path: &str, session: &str, q: &str| {
        paths_found(&s.call(path, &every, session, "kb_search", json!({"query": q})))
    };
    assert_eq!(search("/work/mcp", &ws, "llamas"), ["Plan.md"]);
    assert!(search("/home/mcp", &hs, "llamas").is_empty());
    assert_eq!(search("/home/mcp", &hs, "otters"), ["Garden.md"]);
    let missing = s.call(
        "/work/mcp",
        &every,
        &ws,
        "kb_get_page",
        json!({"path": "Garden.md"}),
    );
    assert_eq!(
        missing.json["error"]["data"]["kind"], "NotFound",
        "{}",
        missing.json
    );

    // A write lands in its own vault only.
    let wrote = s.call(
        "/home/mcp",
        &every,
        &hs,
        "kb_write_page",
        json!({"path": "Shed.md", "content": "# Shed\n\n- rakes and a wheelbarrow\n"}),
    );
    assert_eq!(wrote.status, 200, "{}", wrote.json);
    assert!(wrote.json["error"].is_null(), "{}", wrote.json);
    assert!(home.join("Shed.md").is_file());
    assert!(!work.join("Shed.md").exists());

    // A session belongs to the vault it was opened on.
    let elsewhere = s.call(
        "/home/mcp",
        &every,
        &ws,
        "kb_search",
        json!({"query": "otters"}),
    );
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.json);

    // A token confined to one vault is refused on the other, from initialize on.
    let refused = s.post("/home/mcp", &work_only, None, &common::initialize_request());
    assert_eq!(refused.status, 403, "{}", refused.json);
    assert_eq!(refused.json["error"]["code"], -32005);
    let wos = s.open("/work/mcp", &work_only);
    assert_eq!(
        paths_found(&s.call(
            "/work/mcp",
            &work_only,
            &wos,
            "kb_search",
            json!({"query": "llamas"})
        )),
        ["Plan.md"]
    );
    let call = s.call(
        "/home/mcp",
        &work_only,
        &wos,
        "kb_search",
        json!({"query": "otters"}),
    );
    assert_eq!(call.status, 403, "{}", call.json);
}

#[test]
fn vaults_dir_serves_each_sub_folder_with_the_folders_token_store() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    note(
        &dir.path().join("alpha"),
        "A.md",
        "# A\n\n- alpha note on kestrels\n",
    );
    note(
        &dir.path().join("beta"),
        "B.md",
        "# B\n\n- beta note on herons\n",
    );
    note(&dir.path().join(".trash"), "T.md", "- not a vault\n");
    let root = dir.path().display().to_string();
    let beta_only = token(&["--vault", &root, "--name", "beta", "--vault-access", "beta"]);
    let s = Server::start(&["--vaults", &root]);

    let (status, health) = s.get("/health");
    assert_eq!(status, 200, "{health}");
    let mut names: Vec<&String> = health["vaults"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(
        names,
        ["alpha", "beta"],
        "dot-folders are not vaults: {health}"
    );
    assert_eq!(
        s.post(
            "/alpha/mcp",
            &beta_only,
            None,
            &common::initialize_request()
        )
        .status,
        403
    );
    let bs = s.open("/beta/mcp", &beta_only);
    let found = s.call(
        "/beta/mcp",
        &beta_only,
        &bs,
        "kb_search",
        json!({"query": "herons"}),
    );
    assert_eq!(paths_found(&found), ["B.md"]);
}

/// Bad combinations exit 2 with one line on stderr, before any vault is opened.
#[test]
fn vault_flags_that_cannot_work_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    note(&a, "A.md", "- a\n");
    note(&b, "B.md", "- b\n");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let named = |n: &str, p: &Path| format!("{n}={}", p.display());
    let store = dir.path().join("t.json").display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--http".into(),
                "--vault".into(),
                a.display().to_string(),
                "--vault".into(),
                named("b", &b),
            ],
            "several vaults need a name each",
        ),
        (
            vec![
                "--http".into(),
                "--vault".into(),
                named("x", &a),
                "--vault".into(),
                named("x", &b),
                "--token-store".into(),
                store.clone(),
            ],
            "two vaults are named x",
        ),
        (
            vec![
                "--http".into(),
                "--vault".into(),
                named("a", &a),
                "--vault".into(),
                named("b", &b),
            ],
            "pass --token-store FILE",
        ),
        (
            vec![
                "--http".into(),
                "--vault".into(),
                named("a", &a),
                "--vault".into(),
                named("b", &a),
                "--token-store".into(),
                store.clone(),
            ],
            "the vaults a and b are the same folder",
        ),
        (
            vec![
                "--stdio".into(),
                "--vault".into(),
                named("a", &a),
                "--vault".into(),
                named("b", &b),
            ],
            "stdio serves one vault",
        ),
        (
            vec![
                "--http".into(),
                "--vaults".into(),
                empty.display().to_string(),
            ],
            "has no sub-folder to serve",
        ),
        (
            vec![
                "--http".into(),
                "--vault".into(),
                named("a", &a),
                "--token-store".into(),
                store.clone(),
                "--oauth-issuer".into(),
                "https://id.example.org".into(),
                "--oauth-audience".into(),
                "https://kb.example.org/mcp".into(),
            ],
            "--oauth-issuer serves one vault",
        ),
    ];
    for (args, says) in cases {
        let out = Command::new(BIN)
            .args(&args)
            .args(["--bind", "127.0.0.1:0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(
        !a.join(".pkm").exists(),
        "no vault is opened when the flags are refused"
    );
}
