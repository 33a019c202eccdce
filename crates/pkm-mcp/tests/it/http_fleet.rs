//! A fleet on Redis (issue #17, ADR-0013 `--redis-url`): two real `stratum-mcp --http`
//! instances on one vault, one token store and one real `redis-server` (Debian's package, started
//! here), behind a round-robin proxy that opens a new connection to the next instance for every
//! request, as a load balancer without stickiness does. One token's burst holds across both, a
//! session opened on one is served by the other, a revocation seen by one is seen by the other,
//! and Redis killed mid-run gives what `--redis-fail` says, without a crash.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{self, Redis};

const BIN: &str = env!("CARGO_BIN_EXE_stratum-mcp");

/// A round-robin TCP proxy: each accepted connection goes to the next backend.
struct Proxy {
    url: String,
    served: Arc<Vec<AtomicUsize>>,
}

impl Proxy {
    fn start(backends: Vec<String>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = Arc::clone(&served);
        std::thread::spawn(move || {
            for (n, client) in listener.incoming().enumerate() {
                let Ok(client) = client else { continue };
                let i = n % backends.len();
                counts[i].fetch_add(1, Ordering::SeqCst);
                let addr = backends[i].trim_start_matches("http://").to_owned();
                std::thread::spawn(move || {
                    let Ok(server) = TcpStream::connect(addr) else {
                        return;
                    };
                    let pipe = |mut from: TcpStream, mut to: TcpStream| {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(Shutdown::Write);
                        })
                    };
                    let up = pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                    let down = pipe(server, client);
                    let _ = (up.join(), down.join());
                });
            }
        });
        Proxy { url, served }
    }

    fn served(&self) -> Vec<usize> {
        self.served
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect()
    }
}

/// One `stratum-mcp --http` instance of the fleet; stopped on drop.
struct Instance {
    child: Child,
    url: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        common::terminate(&mut self.child);
    }
}

impl Instance {
    fn start(vault: &Path, store: &Path, redis_url: &str, extra: &[&str]) -> Instance {
        let mut cmd = Command::new(BIN);
        cmd.args(["--http", "--bind", "127.0.0.1:0", "--vault"])
            .arg(vault)
            .arg("--token-store")
            .arg(store)
            .args(["--redis-url", redis_url])
            .args(extra)
            .env("RUST_LOG", "warn")
            .env("MCP_RATE_LIMIT_BURST", "6")
            .env("MCP_RATE_LIMIT_RPS", "0.01");
        let (child, url) = common::spawn_http(cmd);
        Instance { child, url }
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// What a request answered.
struct Answer {
    status: u16,
    session: Option<String>,
    retry_after: Option<String>,
    json: Value,
}

/// A client that opens a new connection for every request, so the proxy spreads them.
fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn send(req: reqwest::blocking::RequestBuilder) -> Answer {
    let r = req.send().unwrap();
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (status, session, retry_after) = (
        r.status().as_u16(),
        header("mcp-session-id"),
        header("retry-after"),
    );
    Answer {
        status,
        session,
        retry_after,
        json: r.json().unwrap_or(Value::Null),
    }
}

fn post(base: &str, token: &str, session: Option<&str>, body: &Value) -> Answer {
    let mut req = client()
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .json(body);
    if let Some(s) = session {
        req = req.header("Mcp-Session-Id", s);
    }
    send(req)
}

fn open(base: &str, token: &str) -> String {
    let a = post(base, token, None, &common::initialize_request());
    assert_eq!(a.status, 200, "initialize: {}", a.json);
    a.session.expect("initialize answers with Mcp-Session-Id")
}

fn search(base: &str, token: &str, session: &str) -> Answer {
    post(
        base,
        token,
        Some(session),
        &common::call_request(1, "kb_search", json!({"query": "llama"})),
    )
}

fn health(base: &str) -> (u16, Value) {
    let a = send(client().get(format!("{base}/health")));
    (a.status, a.json)
}

/// `stratum-mcp token create` on the token store `store`; the token.
fn token(vault: &Path, store: &Path, name: &str) -> String {
    let (vault, store) = (vault.to_str().unwrap(), store.to_str().unwrap());
    common::cli([
        "token",
        "create",
        "--vault",
        vault,
        "--token-store",
        store,
        "--name",
        name,
    ])
}

/// `stratum-mcp token revoke NAME` on the token store `store`, with `extra` arguments.
fn revoke(vault: &Path, store: &Path, name: &str, extra: &[&str]) {
    let (vault, store) = (vault.to_str().unwrap(), store.to_str().unwrap());
    let args = [
        "token",
        "revoke",
        "--vault",
        vault,
        "--token-store",
        store,
        name,
    ];
    common::cli(args.iter().chain(extra));
}

fn vault(dir: &Path) -> PathBuf {
    let vault = dir.join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("Llamas.md"), "# Llamas\n\n- a llama grazes\n").unwrap();
    vault
}

/// Polls `f` every 50 ms for up to 10 s; how long it took to hold.
fn until(what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !f() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: not within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

#[test]
fn two_instances_share_one_burst_and_every_session() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let vault = vault(dir.path());
    let store = dir.path().join("tokens.json");
    let t = token(&vault, &store, "agent");
    let redis = Redis::start();
    let a = Instance::start(&vault, &store, &redis.url(), &[]);
    let b = Instance::start(&vault, &store, &redis.url(), &[]);
    let proxy = Proxy::start(vec![a.url.clone(), b.url.clone()]);

    // Opened on one instance, the session is served by both (the calls alternate between them),
    // and the token's burst of 6 is 6 across the two, not 6 on each.
    let s = open(&proxy.url, &t);
    let statuses: Vec<u16> = (0..10)
        .map(|_| {
            let r = search(&proxy.url, &t, &s);
            if r.status == 429 {
                assert_eq!(r.json["error"]["code"], -32003, "{}", r.json);
                let retry: u64 = r.retry_after.as_deref().unwrap().parse().unwrap();
                assert!(retry >= 1, "Retry-After {retry}");
            } else {
                assert_eq!(r.status, 200, "{}", r.json);
                assert!(r.json["result"].is_object(), "{}", r.json);
            }
            r.status
        })
        .collect();
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 200, 200, 429, 429, 429, 429],
        "one burst of 6 across the fleet"
    );
    let served = proxy.served();
    assert!(
        served.iter().all(|n| *n >= 5),
        "the proxy spread the requests: {served:?}"
    );

    // Ended through one instance, the session is gone on both.
    let ended = send(
        client()
            .delete(format!("{}/mcp", proxy.url))
            .bearer_auth(&t)
            .header("Mcp-Session-Id", &s),
    );
    assert_eq!(ended.status, 204);
    for instance in [&a, &b] {
        assert_eq!(search(&instance.url, &t, &s).status, 404);
    }

    // Each reports the fleet's Redis.
    for instance in [&a, &b] {
        let (status, h) = health(&instance.url);
        assert_eq!(status, 200, "{h}");
        assert_eq!(h["redis"], json!({"status": "ok", "on_failure": "open"}));
    }
}

#[test]
fn a_token_revoked_on_one_host_is_refused_by_the_other() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let vault = vault(dir.path());
    // Each host keeps its own copy of the token store: only Redis carries the revocation.
    let (store_a, store_b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let t = token(&vault, &store_a, "laptop");
    let kept = token(&vault, &store_a, "ci");
    let tablet = token(&vault, &store_a, "tablet");
    std::fs::copy(&store_a, &store_b).unwrap();
    // A third copy, on a host where no instance runs.
    let store_c = dir.path().join("c.json");
    std::fs::copy(&store_a, &store_c).unwrap();
    let redis = Redis::start();
    let _a = Instance::start(&vault, &store_a, &redis.url(), &[]);
    let b = Instance::start(&vault, &store_b, &redis.url(), &[]);
    let on_b = open(&b.url, &t);
    let kept_on_b = open(&b.url, &kept);
    assert_eq!(search(&b.url, &t, &on_b).status, 200);
    // The instances read their stores every half second: let A see the token before it goes.
    std::thread::sleep(Duration::from_secs(1));

    revoke(&vault, &store_a, "laptop", &[]);
    let took = until("B refuses the token revoked on A's store", || {
        search(&b.url, &t, &on_b).status == 401
    });
    eprintln!("revocation reached the other instance in {took:?}");
    let refused = search(&b.url, &t, &on_b);
    assert_eq!(refused.json["error"]["code"], -32600, "{}", refused.json);
    assert!(
        std::fs::read_to_string(&store_b)
            .unwrap()
            .contains("laptop"),
        "B's own store still lists the token"
    );
    assert_eq!(
        search(&b.url, &kept, &kept_on_b).status,
        200,
        "other tokens still work"
    );

    // Revoked on a copy no instance reads, with --redis-url: the fleet is told directly.
    let tablet_on_b = open(&b.url, &tablet);
    assert_eq!(search(&b.url, &tablet, &tablet_on_b).status, 200);
    revoke(&vault, &store_c, "tablet", &["--redis-url", &redis.url()]);
    until("B refuses the token revoked with --redis-url", || {
        search(&b.url, &tablet, &tablet_on_b).status == 401
    });
    assert_eq!(search(&b.url, &kept, &kept_on_b).status, 200);
}

#[test]
fn redis_down_gives_the_configured_behaviour_and_recovery() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let vault = vault(dir.path());
    let store = dir.path().join("tokens.json");
    let t = token(&vault, &store, "agent");
    let redis = Redis::start();
    let mut open_one = Instance::start(&vault, &store, &redis.url(), &[]);
    let mut closed = Instance::start(&vault, &store, &redis.url(), &["--redis-fail", "closed"]);
    let on_open = open(&open_one.url, &t);
    let on_closed = open(&closed.url, &t);
    assert_eq!(search(&open_one.url, &t, &on_open).status, 200);
    assert_eq!(search(&closed.url, &t, &on_closed).status, 200);

    let port = redis.kill();

    // --redis-fail open: the sessions it opened and new ones keep working, on its own buckets;
    // /health says Redis is unreachable but keeps the instance in the pool.
    let r = search(&open_one.url, &t, &on_open);
    assert_eq!(r.status, 200, "{}", r.json);
    let fresh = open(&open_one.url, &t);
    assert_eq!(search(&open_one.url, &t, &fresh).status, 200);
    let (status, h) = health(&open_one.url);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["redis"]["status"], "unreachable", "{h}");

    // --redis-fail closed: 503 with Retry-After, for calls and for /health.
    let r = search(&closed.url, &t, &on_closed);
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.json["error"]["code"], -32000, "{}", r.json);
    assert_eq!(r.retry_after.as_deref(), Some("1"));
    let r = post(&closed.url, &t, None, &common::initialize_request());
    assert_eq!(
        r.status, 503,
        "initialize cannot store its session: {}",
        r.json
    );
    until("the closed instance's /health answers 503", || {
        health(&closed.url).0 == 503
    });
    assert!(open_one.alive() && closed.alive(), "no crash");

    // Redis back (empty: it kept nothing): both serve new sessions through it again.
    let _redis = Redis::start_on(port);
    until("the closed instance is healthy again", || {
        health(&closed.url).0 == 200
    });
    until("the open instance sees Redis again", || {
        health(&open_one.url).1["redis"]["status"] == "ok"
    });
    for instance in [&open_one, &closed] {
        let s = open(&instance.url, &t);
        let r = search(&instance.url, &t, &s);
        assert_eq!(r.status, 200, "{}", r.json);
    }
    assert!(open_one.alive() && closed.alive(), "no crash");
}
