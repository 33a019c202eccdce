//! OAuth 2.1 resource server (MCP authorization; ADR-0010) against a real OpenID provider:
//! `tests/oauth/provider.mjs` runs panva/oidc-provider under node, and the tests here act as an
//! OAuth client that knows only the server's URL: the 401 challenge names the protected resource
//! metadata (RFC 9728), that names the issuer, whose metadata (RFC 8414) gives the endpoints of an
//! authorization-code + PKCE flow with a resource indicator (RFC 8707); the access token it gets
//! is a JWT that `stratum-mcp --http --oauth-issuer ... --oauth-audience ...` checks against the
//! issuer's JWKS. Tokens not meant for this server, expired, unsigned, tampered or signed with a
//! key the issuer no longer publishes are refused; a rotated key is picked up; PATs keep working.
//!
//! Needs node (>= 20) and npm: the provider's packages are installed from tests/oauth's lock file
//! on first use (`.ci/run` installs them beforehand); without node the tests fail saying so.

// Test code, helpers included: a failed step should stop the test where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common;

fn oauth_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/oauth")
}

/// The OpenID provider of `tests/oauth/provider.mjs`, running until dropped.
struct Provider {
    child: Child,
    /// Held so that the provider exits when the test does (it stops when its stdin closes).
    _stdin: Option<ChildStdin>,
    issuer: String,
    other_issuer: String,
    client_id: String,
    redirect_uri: String,
}

/// Installs the OpenID provider's packages (`npm ci`, from tests/oauth/package-lock.json) when
/// they are missing, so that the README's test command works on a fresh machine with node and npm.
fn install_provider(dir: &std::path::Path) {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if dir
        .join("node_modules/oidc-provider/package.json")
        .is_file()
    {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .unwrap_or_else(|e| {
            panic!("the OAuth tests need node >= 20 and npm to install tests/oauth ({e})")
        });
    assert!(
        status.success(),
        "`npm ci` in tests/oauth failed ({status}): the OAuth tests need the OpenID provider's packages"
    );
}

impl Provider {
    fn start() -> Provider {
        let dir = oauth_dir();
        install_provider(&dir);
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start node for tests/oauth/provider.mjs ({e}): install node >= 20")
            });
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("provider.mjs did not start ({e}): {line:?}"));
        let s = |k: &str| info[k].as_str().unwrap().to_owned();
        Provider {
            issuer: s("issuer"),
            other_issuer: s("other_issuer"),
            client_id: s("client_id"),
            redirect_uri: s("redirect_uri"),
            child,
            _stdin: stdin,
        }
    }

    fn control(&self, path: &str) -> Value {
        let r = Client::new()
            .post(format!("{}{path}", self.issuer))
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().unwrap()
    }

    /// The provider signs with a new key and publishes only that one.
    fn rotate_key(&self) -> String {
        self.control("/test/rotate")["kid"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The provider's clock runs `seconds` off.
    fn shift_clock(&self, seconds: i64) {
        self.control(&format!("/test/clock?offset={seconds}"));
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `stratum-mcp --http` with OAuth, as a child process, and a PAT of its token store.
struct Server {
    child: Child,
    base: String,
    audience: String,
    pat: String,
    log: Arc<Mutex<String>>,
    _tmp: tempfile::TempDir,
}

impl Server {
    fn start(issuer: &str, env: &[(&str, &str)]) -> Server {
        let tmp = common::temp_example_vault();
        let vault = tmp.path().join("vault");
        let store = tmp.path().join("tokens.json");
        let out = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
            .args(["token", "create", "--name", "laptop", "--vault"])
            .arg(&vault)
            .arg("--token-store")
            .arg(&store)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let pat = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        let port = common::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let audience = format!("{base}/mcp");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
        cmd.args(["--http", "--bind", &format!("127.0.0.1:{port}"), "--vault"])
            .arg(&vault)
            .arg("--token-store")
            .arg(&store)
            .args(["--oauth-issuer", issuer, "--oauth-audience", &audience])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(String::new()));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "the server exited: {}",
                log.lock().unwrap()
            );
            log.lock().unwrap().push_str(&line);
            if line.starts_with("listening on ") {
                break;
            }
        }
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Server {
            child,
            base,
            audience,
            pat,
            log,
            _tmp: tmp,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn post(&self, body: &Value, token: Option<&str>, session: Option<&str>) -> Reply {
        let mut req = Client::new()
            .post(&self.audience)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = session {
            req = req
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-06-18");
        }
        Reply::of(req.send().unwrap())
    }

    fn initialize(&self, token: Option<&str>) -> String {
        let r = self.post(&common::initialize_request(), token, None);
        assert_eq!(r.status, 200, "{}", r.json);
        r.header("mcp-session-id").unwrap().to_owned()
    }

    fn search(&self, token: &str, session: &str) -> Reply {
        self.post(
            &common::call_request(1, "kb_search", json!({"query": "observability"})),
            Some(token),
            Some(session),
        )
    }

    /// A new session with `token`, then `kb_search`.
    fn search_anew(&self, token: &str) -> Reply {
        let session = self.initialize(Some(token));
        self.search(token, &session)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        common::terminate(&mut self.child);
    }
}

struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    json: Value,
}

impl Reply {
    fn of(r: Response) -> Reply {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let bytes = r.bytes().unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            json,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn challenge(&self) -> &str {
        self.header("www-authenticate").unwrap_or("")
    }

    fn assert_refused(&self, what: &str, why: &str) {
        assert_eq!(self.status, 401, "{what}: {}", self.json);
        assert_eq!(self.json["error"]["code"], -32600, "{what}: {}", self.json);
        let c = self.challenge();
        assert!(c.starts_with("Bearer resource_metadata=\""), "{what}: {c}");
        assert!(c.contains("error=\"invalid_token\""), "{what}: {c}");
        assert!(c.contains(why), "{what}: expected {why:?} in {c}");
    }
}

/// The value of `name="..."` in a `WWW-Authenticate` header.
fn auth_param<'a>(challenge: &'a str, name: &str) -> Option<&'a str> {
    let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let len = challenge[start..].find('"')?;
    Some(&challenge[start..start + len])
}

fn form_encode(pairs: &[(&str, &str)]) -> String {
    fn enc(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    u.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// What an OAuth client asks for.
struct Ask<'a> {
    /// The account that logs in (the token's `sub`).
    user: &'a str,
    /// Space-separated scopes; `None`: those of the server's 401 challenge.
    scope: Option<&'a str>,
    /// The resource indicator; `None`: the resource of the server's metadata.
    resource: Option<&'a str>,
    /// Another authorization server than the one the metadata names.
    issuer: Option<&'a str>,
}

impl Default for Ask<'_> {
    fn default() -> Self {
        Ask {
            user: "alice",
            scope: None,
            resource: None,
            issuer: None,
        }
    }
}

/// An OAuth 2.1 client that knows only the MCP server's URL: from the 401 challenge to the
/// protected resource metadata, the issuer's metadata, an authorization-code + PKCE flow with a
/// resource indicator, and the token request. Returns the access token.
fn oauth_login(server: &Server, provider: &Provider, ask: &Ask) -> String {
    let http = Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // 1. The server says where its metadata is.
    let session = server.initialize(None);
    let r = server.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        None,
        Some(&session),
    );
    assert_eq!(r.status, 401, "{}", r.json);
    let challenge = r.challenge().to_owned();
    let prm_url = auth_param(&challenge, "resource_metadata").unwrap();
    let scope = ask
        .scope
        .map(str::to_owned)
        .unwrap_or_else(|| auth_param(&challenge, "scope").unwrap().to_owned());
    // 2. Protected resource metadata (RFC 9728) names the resource and its issuer.
    let prm: Value = http.get(prm_url).send().unwrap().json().unwrap();
    assert_eq!(prm["resource"], server.audience.as_str());
    let issuer = ask
        .issuer
        .unwrap_or_else(|| prm["authorization_servers"][0].as_str().unwrap());
    // 3. The issuer's metadata (RFC 8414, else OpenID discovery).
    let meta: Value = [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ]
    .iter()
    .find_map(|p| {
        let r = http.get(format!("{issuer}{p}")).send().ok()?;
        r.status()
            .is_success()
            .then(|| r.json::<Value>().ok())
            .flatten()
    })
    .unwrap();
    assert_eq!(meta["issuer"], issuer);
    assert!(
        meta["code_challenge_methods_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("S256"))
    );
    let resource = ask.resource.unwrap_or(prm["resource"].as_str().unwrap());
    // 4. Authorization request with PKCE (S256) and the resource indicator; the provider's login
    //    and consent interactions answer at once, so following redirects (with cookies) ends at
    //    the redirect URI with a code.
    let mut random = [0u8; 32];
    getrandom::fill(&mut random).unwrap();
    let verifier = B64.encode(random);
    let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
    let state = uuid::Uuid::new_v4().to_string();
    let mut url = reqwest::Url::parse(meta["authorization_endpoint"].as_str().unwrap()).unwrap();
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &provider.client_id)
        .append_pair("redirect_uri", &provider.redirect_uri)
        .append_pair("scope", &scope)
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", resource)
        .append_pair("login_hint", ask.user);
    let mut next = url.to_string();
    let mut cookies: BTreeMap<String, String> = BTreeMap::new();
    let code = loop {
        if next.starts_with(&provider.redirect_uri) {
            assert_eq!(query_param(&next, "state").as_deref(), Some(state.as_str()));
            assert_eq!(query_param(&next, "iss").as_deref(), Some(issuer));
            break query_param(&next, "code").unwrap_or_else(|| panic!("no code: {next}"));
        }
        let cookie = cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let r = http.get(&next).header("cookie", cookie).send().unwrap();
        for set in r.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                if v.is_empty() {
                    cookies.remove(k.trim());
                } else {
                    cookies.insert(k.trim().to_owned(), v.to_owned());
                }
            }
        }
        assert!(
            r.status().is_redirection(),
            "{next}: {} {}",
            r.status(),
            r.text().unwrap_or_default()
        );
        let location = r.headers()["location"].to_str().unwrap();
        next = reqwest::Url::parse(&next)
            .unwrap()
            .join(location)
            .unwrap()
            .to_string();
    };
    // 5. The token request proves the PKCE verifier.
    let r = http
        .post(meta["token_endpoint"].as_str().unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_encode(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &provider.redirect_uri),
            ("client_id", &provider.client_id),
            ("code_verifier", &verifier),
            ("resource", resource),
        ]))
        .send()
        .unwrap();
    let status = r.status();
    let body: Value = r.json().unwrap();
    assert!(status.is_success(), "token request: {status} {body}");
    assert_eq!(body["token_type"], "Bearer");
    body["access_token"].as_str().unwrap().to_owned()
}

fn jwt_parts(token: &str) -> (Value, Value, String) {
    let mut parts = token.split('.');
    let mut part =
        || serde_json::from_slice::<Value>(&B64.decode(parts.next().unwrap()).unwrap()).unwrap();
    let header = part();
    let payload = part();
    (
        header,
        payload,
        token.rsplit('.').next().unwrap().to_owned(),
    )
}

fn jwt_join(header: &Value, payload: &Value, signature: &str) -> String {
    format!(
        "{}.{}.{signature}",
        B64.encode(serde_json::to_vec(header).unwrap()),
        B64.encode(serde_json::to_vec(payload).unwrap())
    )
}

#[test]
fn an_oauth_client_discovers_the_issuer_and_calls_kb_search() {
    let _one = common::serial();
    let provider = Provider::start();
    let server = Server::start(&provider.issuer, &[]);

    // RFC 9728 metadata at the root and with the resource's path, the same document.
    let http = Client::new();
    let prm_root: Value = http
        .get(format!(
            "{}/.well-known/oauth-protected-resource",
            server.base
        ))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let prm_path: Value = http
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            server.base
        ))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(prm_root, prm_path);
    assert_eq!(prm_root["resource"], server.audience.as_str());
    assert_eq!(prm_root["authorization_servers"], json!([provider.issuer]));
    assert!(
        prm_root["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("kb:search"))
    );

    // Without a token: 401 whose challenge points at the metadata and the scopes to ask for.
    let session = server.initialize(None);
    let r = server.post(
        &common::call_request(1, "kb_search", json!({"query": "observability"})),
        None,
        Some(&session),
    );
    assert_eq!(r.status, 401, "{}", r.json);
    let c = r.challenge();
    assert_eq!(
        auth_param(c, "resource_metadata"),
        Some(format!("{}/.well-known/oauth-protected-resource/mcp", server.base).as_str()),
        "{c}"
    );
    assert!(auth_param(c, "scope").unwrap().contains("kb:search"), "{c}");

    // The OAuth client gets a token from the issuer the metadata names and calls kb_search.
    let token = oauth_login(&server, &provider, &Ask::default());
    let (header, payload, _) = jwt_parts(&token);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(payload["aud"], server.audience.as_str());
    assert_eq!(payload["sub"], "alice");
    let session = server.initialize(Some(&token));
    let r = server.search(&token, &session);
    assert_eq!(r.status, 200, "{}\n{}", r.json, server.log());
    let results = r.json["result"]["structuredContent"]["results"]
        .as_array()
        .unwrap();
    assert!(!results.is_empty(), "{}", r.json);
    // The session is bound to alice: another subject's token cannot use it.
    let bob = oauth_login(
        &server,
        &provider,
        &Ask {
            user: "bob",
            ..Ask::default()
        },
    );
    assert_eq!(server.search(&bob, &session).status, 404);
    assert_eq!(server.search_anew(&bob).status, 200);

    // A personal access token works beside OAuth.
    let r = server.search_anew(&server.pat);
    assert_eq!(r.status, 200, "{}", r.json);

    // A token without kb:search: 403 with the insufficient_scope challenge (held + needed).
    let reader = oauth_login(
        &server,
        &provider,
        &Ask {
            scope: Some("openid kb:read"),
            ..Ask::default()
        },
    );
    assert_eq!(jwt_parts(&reader).1["scope"], "kb:read");
    let r = server.search_anew(&reader);
    assert_eq!(r.status, 403, "{}", r.json);
    assert_eq!(r.json["error"]["code"], -32005);
    let c = r.challenge();
    assert!(c.starts_with("Bearer error=\"insufficient_scope\""), "{c}");
    assert_eq!(auth_param(c, "scope"), Some("kb:read kb:search"), "{c}");
    assert!(auth_param(c, "resource_metadata").is_some(), "{c}");
}

#[test]
fn oauth_tokens_not_meant_for_this_server_are_refused() {
    let _one = common::serial();
    let provider = Provider::start();
    // A small search bucket, to see that limits follow the subject.
    let server = Server::start(
        &provider.issuer,
        &[
            ("MCP_RATE_LIMIT_SEARCH_BURST", "2"),
            ("MCP_RATE_LIMIT_SEARCH_RPS", "0.001"),
        ],
    );
    let good = oauth_login(&server, &provider, &Ask::default());

    // Issued for another resource (RFC 8707 audience).
    let other_aud = oauth_login(
        &server,
        &provider,
        &Ask {
            resource: Some("http://127.0.0.1:1/mcp"),
            ..Ask::default()
        },
    );
    assert_eq!(jwt_parts(&other_aud).1["aud"], "http://127.0.0.1:1/mcp");
    server
        .search_anew_refused(&other_aud)
        .assert_refused("wrong audience", "another audience");

    // Issued by another issuer, signed with the very same key.
    let other_iss = oauth_login(
        &server,
        &provider,
        &Ask {
            issuer: Some(&provider.other_issuer),
            ..Ask::default()
        },
    );
    assert_eq!(jwt_parts(&other_iss).0["kid"], jwt_parts(&good).0["kid"]);
    server
        .search_anew_refused(&other_iss)
        .assert_refused("wrong issuer", "another issuer");

    // Expired: issued by the provider while its clock ran two hours late.
    provider.shift_clock(-7200);
    let expired = oauth_login(&server, &provider, &Ask::default());
    provider.shift_clock(0);
    server
        .search_anew_refused(&expired)
        .assert_refused("expired", "expired");

    // Unsigned: a real token's claims under `alg: none`.
    let (mut header, payload, signature) = jwt_parts(&good);
    header["alg"] = json!("none");
    for unsigned in [
        jwt_join(&header, &payload, ""),
        jwt_join(&header, &payload, &signature),
    ] {
        server
            .search_anew_refused(&unsigned)
            .assert_refused("alg none", "malformed token header");
    }
    // Tampered: more scopes written into a real token, the signature kept.
    let (header, mut payload, signature) = jwt_parts(&good);
    payload["scope"] = json!("kb:read kb:search kb:admin");
    server
        .search_anew_refused(&jwt_join(&header, &payload, &signature))
        .assert_refused("tampered", "invalid signature");
    // A token whose key id the issuer never published.
    let (mut header, payload, signature) = jwt_parts(&good);
    header["kid"] = json!("made-up");
    server
        .search_anew_refused(&jwt_join(&header, &payload, &signature))
        .assert_refused("unknown kid", "no signing key");

    // The good token still works; the search bucket (burst 2) belongs to alice, whichever of her
    // tokens she presents; bob and the PAT have their own.
    assert_eq!(server.search_anew(&good).status, 200);
    let good_again = oauth_login(&server, &provider, &Ask::default());
    assert_eq!(server.search_anew(&good_again).status, 200);
    let r = server.search_anew(&good);
    assert_eq!(r.status, 429, "{}", r.json);
    assert_eq!(server.search_anew(&good_again).status, 429);
    let bob = oauth_login(
        &server,
        &provider,
        &Ask {
            user: "bob",
            ..Ask::default()
        },
    );
    assert_eq!(server.search_anew(&bob).status, 200);
    assert_eq!(server.search_anew(&server.pat).status, 200);
}

#[test]
fn a_rotated_signing_key_is_fetched_and_the_retired_one_refused() {
    let _one = common::serial();
    let provider = Provider::start();
    let server = Server::start(&provider.issuer, &[]);
    let before = oauth_login(&server, &provider, &Ask::default());
    assert_eq!(jwt_parts(&before).0["alg"], "RS256");
    assert_eq!(server.search_anew(&before).status, 200);

    // The provider moves to a new key (ES256) and stops publishing the old one.
    let kid = provider.rotate_key();
    let after = oauth_login(&server, &provider, &Ask::default());
    let (header, _, _) = jwt_parts(&after);
    assert_eq!(header["kid"], kid.as_str());
    assert_eq!(header["alg"], "ES256");
    let r = server.search_anew(&after);
    assert_eq!(r.status, 200, "{}\n{}", r.json, server.log());
    // The server refetched the keys for the unknown kid: the retired key is gone.
    server
        .search_anew_refused(&before)
        .assert_refused("retired key", "no signing key");
}

#[test]
fn oauth_flags_are_checked() {
    let bin = env!("CARGO_BIN_EXE_stratum-mcp");
    let tmp = common::temp_example_vault();
    let vault = tmp.path().join("vault");
    for (args, says) in [
        (
            vec!["--oauth-issuer", "https://id.example.com"],
            "--oauth-audience",
        ),
        (
            vec![
                "--oauth-issuer",
                "http://id.example.com",
                "--oauth-audience",
                "https://kb.example.com/mcp",
            ],
            "https",
        ),
        (
            vec![
                "--oauth-issuer",
                "https://id.example.com",
                "--oauth-audience",
                "https://kb.example.com/mcp",
                "--no-auth",
            ],
            "--no-auth",
        ),
    ] {
        let out = Command::new(bin)
            .args(["--http", "--bind", "127.0.0.1:0", "--vault"])
            .arg(&vault)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

impl Server {
    /// `initialize` then `kb_search` with a token expected to be refused (initialize itself needs
    /// no token, but a presented token that fails is refused already there).
    fn search_anew_refused(&self, token: &str) -> Reply {
        let r = self.post(&common::initialize_request(), Some(token), None);
        assert_eq!(r.status, 401, "initialize with a bad token: {}", r.json);
        let session = self.initialize(None);
        self.search(token, &session)
    }
}
