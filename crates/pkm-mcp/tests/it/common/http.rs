//! `TestServer`: `pkm_mcp::http::router` served on a real socket (optionally with TLS), a token
//! store with a personal token, and `post` / `call` helpers that return (status, headers, json).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::copy_dir;
use pkm_core::Vault;
use pkm_mcp::StratumServer;
use pkm_mcp::http::{self, Auth, HttpConfig, HttpState, Metrics};
use pkm_mcp::scope::Scope;
use pkm_mcp::tokens::{TokenStore, TokenVerifier};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use stratum_app::App;
use stratum_app::scan::{self, ScanMode};

/// The example vault shipped with the repository.
pub fn example_vault() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/vault")
}

/// Every file of the vault outside `.pkm/`, with its bytes: equal snapshots mean nothing changed.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name() == ".pkm" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// How to start a [`TestServer`].
pub struct Options {
    pub auth: bool,
    pub config: HttpConfig,
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            auth: true,
            config: HttpConfig::default(),
            tls: None,
        }
    }
}

/// What the server answered.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    /// The body as JSON; `Null` for an empty body.
    pub json: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn error_code(&self) -> Option<i64> {
        self.json["error"]["code"].as_i64()
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    /// A personal token (all scopes but kb:admin) named "test".
    pub token: String,
    pub store: TokenStore,
    pub vault: PathBuf,
    pub client: reqwest::Client,
    /// The counters `--metrics-bind` would expose.
    pub metrics: Arc<Metrics>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub _tmp: tempfile::TempDir,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl TestServer {
    /// A server with token auth over a fresh copy of `vault_dir`.
    pub async fn start(vault_dir: &Path) -> TestServer {
        TestServer::start_with(vault_dir, Options::default()).await
    }

    pub async fn start_with(vault_dir: &Path, opts: Options) -> TestServer {
        let tmp = tempfile::tempdir().unwrap();
        let vault = tmp.path().join("vault");
        copy_dir(vault_dir, &vault);
        let v = vault.clone();
        let app = tokio::task::spawn_blocking(move || {
            let app = App::open(Vault::open(&v).unwrap(), pkm_mcp::server::app_config()).unwrap();
            scan::scan(&app, ScanMode::Incremental).unwrap();
            app.mark_ready();
            app
        })
        .await
        .unwrap();
        let store = TokenStore::new(tmp.path().join("tokens.json"));
        let token = store.create("test", &Scope::PERSONAL).unwrap();
        let auth = if opts.auth {
            Auth::Tokens(Arc::new(TokenVerifier::new(store.clone())))
        } else {
            Auth::Disabled
        };
        let state = HttpState::new(StratumServer::new(app), auth, opts.config).unwrap();
        let metrics = state.metrics();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(http::serve(
            listener,
            http::router(state),
            opts.tls,
            async {
                let _ = stopped.await;
            },
        ));
        TestServer {
            addr,
            token,
            store,
            vault,
            client: reqwest::Client::new(),
            metrics,
            stop: Some(stop),
            _tmp: tmp,
        }
    }

    /// Creates another token with exactly `scopes`.
    pub fn token_with(&self, name: &str, scopes: &[Scope]) -> String {
        self.store.create(name, scopes).unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends a prepared request and collects the reply.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.unwrap();
        let json = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        Reply {
            status,
            headers,
            json,
        }
    }

    /// `POST /mcp` of a raw body with the given headers (Content-Type: application/json added).
    pub async fn post_bytes(&self, body: Vec<u8>, headers: &[(&str, &str)]) -> Reply {
        let mut req = self
            .client
            .post(self.url("/mcp"))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, HeaderValue::from_str(v).unwrap());
        }
        self.send(req).await
    }

    /// `POST /mcp` of a JSON-RPC message (or batch), with `Authorization: Bearer` and
    /// `Mcp-Session-Id` when given.
    pub async fn post(&self, body: &Value, token: Option<&str>, session: Option<&str>) -> Reply {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = Vec::new();
        if let Some(a) = &auth {
            headers.push(("authorization", a.as_str()));
        }
        if let Some(s) = session {
            headers.push(("mcp-session-id", s));
        }
        self.post_bytes(serde_json::to_vec(body).unwrap(), &headers)
            .await
    }

    /// `initialize` (with `token` if given); returns the session id.
    pub async fn initialize(&self, token: Option<&str>) -> String {
        let r = self.post(&initialize_request(), token, None).await;
        assert_eq!(r.status, 200, "{:?}", r.json);
        r.header("mcp-session-id")
            .expect("initialize answers with Mcp-Session-Id")
            .to_owned()
    }

    /// `tools/call` of `tool` with `args` as `token` in `session`.
    pub async fn call(&self, token: &str, session: &str, tool: &str, args: Value) -> Reply {
        self.post(&call_request(1, tool, args), Some(token), Some(session))
            .await
    }
}

pub fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "1"}
    }})
}

pub fn call_request(id: i64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}
