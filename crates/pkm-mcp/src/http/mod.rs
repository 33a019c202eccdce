//! The Streamable HTTP door (contract §2.1, §7, §9, §12; ADR-0013 "HTTP security" and
//! "Streamable HTTP behaviour"): `POST <base>/mcp` answers JSON-RPC (single or batch) through the same
//! `StratumServer` as stdio, `DELETE <base>/mcp` ends a session, `GET <base>/health` reports the store.
//!
//! Every request passes, in this order: Host and Origin allow-lists (DNS rebinding), body size and
//! Content-Type, JSON and JSON-RPC shape, `MCP-Protocol-Version`, the token, the session, then per
//! message the rate limit and the dispatcher (which checks scopes). The door knows no tool by name:
//! rate-limit tiers come from `tools::find(name).scope`.
//!
//! With `--oauth-issuer` and `--oauth-audience` the door is also an OAuth 2.1 resource server
//! (`crate::oauth`): it serves its protected resource metadata (RFC 9728) and accepts the issuer's
//! JWT access tokens beside personal access tokens; 401 and 403 then carry the `WWW-Authenticate`
//! challenges of the MCP authorization spec.

mod fleet;
pub mod metrics;
mod origin;
pub mod rate;
mod rpc;
mod session;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::IncomingStream;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::errors::{Kind, McpError};
use crate::oauth::{OAuthVerifier, PRM_PATH};
use crate::server::{StratumServer, VERSION};
use crate::tokens::TokenVerifier;

pub use self::fleet::{Fleet, OnFailure};
pub use self::metrics::Metrics;
pub use self::rate::{Limit, MemoryRateStore, RateLimits, RateStore};

/// `MCP_BODY_MAX` of contract §11: larger request bodies get HTTP 413.
pub const BODY_MAX_BYTES: usize = 2 * 1024 * 1024;

/// How long a client may take to send its request body before it gets 408.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `/health` waits for the store.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long in-flight requests may run on after SIGTERM/SIGINT before the process stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Who may call `/mcp`.
#[derive(Clone)]
pub enum Auth {
    /// `--no-auth` (loopback only): every caller holds every scope.
    Disabled,
    /// Personal access tokens checked against the token store.
    Tokens(Arc<TokenVerifier>),
}

/// The HTTP door's settings, beyond the server itself.
#[derive(Debug, Clone, Default)]
pub struct HttpConfig {
    /// Path prefix (`--base`), e.g. `/kb`; empty serves `/mcp` and `/health`.
    pub base: String,
    /// Extra Host header values to accept (`--allowed-host`); loopback names are always accepted.
    /// `name` accepts any port, `name:port` only that one.
    pub allowed_hosts: Vec<String>,
    /// Browser origins to accept (`--allowed-origin`); loopback origins are always accepted.
    pub allowed_origins: Vec<String>,
    pub rate_limits: RateLimits,
    /// JWT access tokens of an OAuth issuer (`--oauth-issuer`), beside the personal access tokens
    /// of [`Auth::Tokens`]; ignored with [`Auth::Disabled`].
    pub oauth: Option<Arc<OAuthVerifier>>,
    /// The Redis of a fleet (`--redis-url`): rate-limit buckets and sessions live there.
    pub fleet: Option<Arc<Fleet>>,
}

/// One vault as the door serves it: at `<base>/mcp` when it is the only one and has no name, at
/// `<base>/<name>/mcp` otherwise. A session belongs to the vault it was opened on.
struct Door {
    name: Option<String>,
    server: StratumServer,
    sessions: session::SessionStore,
}

impl Door {
    fn prefix(&self, base: &str) -> String {
        match &self.name {
            Some(name) => format!("{base}/{name}"),
            None => base.to_owned(),
        }
    }
}

struct Shared {
    doors: Vec<Door>,
    auth: Auth,
    oauth: Option<Arc<OAuthVerifier>>,
    base: String,
    origin: origin::AllowList,
    limiter: fleet::Limiter,
    fleet: Option<Arc<Fleet>>,
    metrics: Arc<Metrics>,
}

/// Everything a request handler needs; cheap to clone.
#[derive(Clone)]
pub struct HttpState {
    shared: Arc<Shared>,
}

impl HttpState {
    /// One vault at `<base>/mcp`, with the in-memory rate-limit store. Fails (one line) on a
    /// malformed `base`.
    pub fn new(server: StratumServer, auth: Auth, config: HttpConfig) -> Result<HttpState, String> {
        HttpState::serving(
            vec![(None, server)],
            auth,
            config,
            Arc::new(MemoryRateStore::new()),
        )
    }

    /// State serving `vaults` (each at `<base>/<name>/mcp`, or one without a name at
    /// `<base>/mcp`), whose rate-limit counters live in `store` (e.g. shared between instances):
    /// a token's buckets are one across its vaults.
    pub fn serving(
        vaults: Vec<(Option<String>, StratumServer)>,
        auth: Auth,
        config: HttpConfig,
        store: Arc<dyn RateStore>,
    ) -> Result<HttpState, String> {
        let base = normalize_base(&config.base)?;
        let oauth = match auth {
            Auth::Disabled => None,
            Auth::Tokens(_) => config.oauth,
        };
        Ok(HttpState {
            shared: Arc::new(Shared {
                doors: vaults
                    .into_iter()
                    .map(|(name, server)| {
                        let fleet = config
                            .fleet
                            .as_ref()
                            .map(|f| (Arc::clone(f), name.clone().unwrap_or_else(|| "-".into())));
                        Door {
                            name,
                            server,
                            sessions: session::SessionStore::new(fleet),
                        }
                    })
                    .collect(),
                auth,
                oauth,
                base,
                origin: origin::AllowList::new(&config.allowed_hosts, &config.allowed_origins),
                limiter: fleet::Limiter::new(config.rate_limits, store, config.fleet.clone()),
                fleet: config.fleet,
                metrics: Arc::new(Metrics::default()),
            }),
        })
    }

    /// The counters `--metrics-bind` exposes.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }
}

/// The HTTP status of a JSON-RPC error answered alone (ADR-0013 "Streamable HTTP behaviour").
/// Tool errors travel with 200: the JSON-RPC error says what went wrong.
pub fn status_for(kind: Kind) -> StatusCode {
    match kind {
        Kind::ParseError | Kind::InvalidRequest => StatusCode::BAD_REQUEST,
        Kind::Unauthenticated => StatusCode::UNAUTHORIZED,
        Kind::ScopesDenied => StatusCode::FORBIDDEN,
        Kind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Kind::MethodNotFound
        | Kind::InvalidArgs
        | Kind::Internal
        | Kind::External
        | Kind::NotFound
        | Kind::Conflict
        | Kind::VaultLocked => StatusCode::OK,
    }
}

/// The remote address of a connection, for rate-limit keys without auth.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

impl Connected<IncomingStream<'_, TcpListener>> for ClientAddr {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> ClientAddr {
        ClientAddr(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, tls::TlsListener>> for ClientAddr {
    fn connect_info(stream: IncomingStream<'_, tls::TlsListener>) -> ClientAddr {
        ClientAddr(*stream.remote_addr())
    }
}

/// The routes: per vault `POST|DELETE <prefix>/mcp` (`GET` → 405) and `GET <prefix>/health`,
/// with several vaults `GET <base>/health` for all of them, and with OAuth the protected resource
/// metadata; behind the Host and Origin checks and a tracing span per request.
pub fn router(state: HttpState) -> Router {
    let base = state.shared.base.clone();
    let mut router = Router::new();
    for (vault, door) in state.shared.doors.iter().enumerate() {
        let prefix = door.prefix(&base);
        router = router
            .route(
                &format!("{prefix}/mcp"),
                post(move |State(s): State<HttpState>, req: Request| rpc::post(s, vault, req))
                    .delete(move |State(s): State<HttpState>, req: Request| {
                        rpc::delete(s, vault, req)
                    })
                    .get(get_mcp),
            )
            .route(
                &format!("{prefix}/health"),
                get(move |State(s): State<HttpState>| health(s, vault)),
            );
    }
    if state.shared.doors.iter().any(|d| d.name.is_some()) {
        router = router.route(&format!("{base}/health"), get(health_all));
    }
    if let Some(oauth) = &state.shared.oauth {
        // RFC 9728 §3.1: at the root, under the base, and with the resource's path appended (both
        // the audience's path, which clients derive the URL from, and <base>/mcp as served here).
        let mut paths = vec![
            PRM_PATH.to_owned(),
            format!("{base}{PRM_PATH}"),
            format!("{PRM_PATH}{base}/mcp"),
            oauth.metadata_path(),
        ];
        paths.sort();
        paths.dedup();
        for path in paths {
            router = router.route(&path, get(protected_resource_metadata));
        }
    }
    router
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), origin::check))
        .layer(middleware::from_fn_with_state(state.clone(), trace))
        .with_state(state)
}

/// A JSON-RPC error response with `id: null` and the given status.
fn error_response(status: StatusCode, e: &McpError) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": Value::Null, "error": e.to_json()});
    with_retry_after(json_response(status, &body), e)
}

/// `r` with the `Retry-After` header of an error that says when to retry.
fn with_retry_after(mut r: Response, e: &McpError) -> Response {
    if let Some(secs) = e.retry_after_seconds {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

async fn get_mcp() -> Response {
    let e = McpError::new(
        Kind::InvalidRequest,
        "GET is not served on this endpoint (no event stream)",
    )
    .with_hint("POST JSON-RPC messages with Content-Type: application/json.");
    let mut r = error_response(StatusCode::METHOD_NOT_ALLOWED, &e);
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    r
}

async fn not_found() -> Response {
    let e = McpError::new(Kind::InvalidRequest, "no such endpoint")
        .with_hint(
            "MCP is served at <base>/mcp (<base>/<vault>/mcp with several vaults), health at <base>/health.",
        );
    error_response(StatusCode::NOT_FOUND, &e)
}

/// `GET /.well-known/oauth-protected-resource[...]` (RFC 9728): no auth.
async fn protected_resource_metadata(State(state): State<HttpState>) -> Response {
    match &state.shared.oauth {
        Some(oauth) => {
            let mut r = json_response(StatusCode::OK, &oauth.metadata());
            r.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            );
            r
        }
        None => not_found().await,
    }
}

/// One vault's health: `index_fresh` from a cheap query of its store, or why it cannot answer.
async fn vault_health(door: &Door) -> Result<Value, &'static str> {
    let query = door.server.run(crate::wire::Request::Info);
    match tokio::time::timeout(HEALTH_TIMEOUT, query).await {
        Ok(Ok(info)) => Ok(info["index_fresh"].clone()),
        Ok(Err(e)) => {
            tracing::error!(vault = door.name.as_deref(), error = %e.message, "health: the store cannot answer");
            Err("the store cannot answer")
        }
        Err(_) => Err("the store did not answer in time"),
    }
}

/// The fleet's Redis as `/health` reports it (`None` without `--redis-url`), and whether its
/// being unreachable stops this instance (`--redis-fail closed`).
fn redis_health(state: &HttpState) -> Option<(Value, bool)> {
    let fleet = state.shared.fleet.as_ref()?;
    let up = fleet.is_up();
    let report = json!({
        "status": if up { "ok" } else { "unreachable" },
        "on_failure": fleet.on_failure(),
    });
    Some((report, !up && fleet.fails_closed()))
}

/// A health document: 200 with `"status": "ok"`, or 503 with `"status": "error"` and `reason`;
/// `redis` beside with a fleet.
fn health_response(state: &HttpState, mut body: Value, mut reason: Option<&str>) -> Response {
    if let Some((redis, stops)) = redis_health(state) {
        body["redis"] = redis;
        if stops {
            reason = reason.or(Some("Redis is unreachable and --redis-fail is closed"));
        }
    }
    body["version"] = json!(VERSION);
    match reason {
        None => {
            body["status"] = json!("ok");
            json_response(StatusCode::OK, &body)
        }
        Some(reason) => {
            body["status"] = json!("error");
            body["reason"] = json!(reason);
            json_response(StatusCode::SERVICE_UNAVAILABLE, &body)
        }
    }
}

/// `GET <prefix>/health` (contract §12): no auth, a cheap query of the vault's store.
async fn health(state: HttpState, vault: usize) -> Response {
    match vault_health(&state.shared.doors[vault]).await {
        Ok(fresh) => health_response(
            &state,
            json!({"status": "ok", "store": "ok", "index_fresh": fresh}),
            None,
        ),
        Err(reason) => health_response(
            &state,
            json!({"status": "error", "store": "error"}),
            Some(reason),
        ),
    }
}

/// `GET <base>/health` with several vaults: each vault's health, and 503 when any cannot answer.
async fn health_all(State(state): State<HttpState>) -> Response {
    let mut vaults = serde_json::Map::new();
    let mut failed = None;
    for door in &state.shared.doors {
        let entry = match vault_health(door).await {
            Ok(fresh) => json!({"status": "ok", "store": "ok", "index_fresh": fresh}),
            Err(reason) => {
                failed = Some("a vault's store cannot answer");
                json!({"status": "error", "store": "error", "reason": reason})
            }
        };
        vaults.insert(door.name.clone().unwrap_or_default(), entry);
    }
    health_response(&state, json!({"status": "ok", "vaults": vaults}), failed)
}

/// One span per request: HTTP method, path, then (recorded by the handler) JSON-RPC method, tool
/// and token name (never the token); the status and latency are logged when it ends.
async fn trace(State(state): State<HttpState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let span = tracing::info_span!(
        "http",
        method = %req.method(),
        path = %req.uri().path(),
        rpc = tracing::field::Empty,
        tool = tracing::field::Empty,
        token = tracing::field::Empty,
    );
    let response = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    state.shared.metrics.observe(status, elapsed);
    span.in_scope(|| {
        tracing::info!(
            status,
            latency_ms = elapsed.as_secs_f64() * 1000.0,
            "request"
        )
    });
    response
}

/// `--base`: empty, or `/seg[/seg...]` of URL-safe characters; a trailing slash is dropped.
pub fn normalize_base(base: &str) -> Result<String, String> {
    let trimmed = base.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let with_slash = if trimmed.starts_with('/') {
        trimmed.to_owned()
    } else {
        format!("/{trimmed}")
    };
    let ok = with_slash.split('/').skip(1).all(|seg| {
        !seg.is_empty()
            && seg != "."
            && seg != ".."
            && seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    });
    if ok {
        Ok(with_slash)
    } else {
        Err(format!(
            "--base {base:?} is not a path prefix like /kb (letters, digits, '-', '.', '_', '~')"
        ))
    }
}

/// Serves `app` on `listener` (TLS when `tls` is given) until `shutdown` completes; in-flight
/// requests then finish before this returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match tls {
        None => {
            let service = app.into_make_service_with_connect_info::<ClientAddr>();
            axum::serve(listener, service)
                .with_graceful_shutdown(shutdown)
                .await
        }
        Some(config) => {
            let listener = tls::TlsListener::new(listener, config)?;
            let service = app.into_make_service_with_connect_info::<ClientAddr>();
            axum::serve(listener, service)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// Listens on `bind` (and serves metrics on `metrics_bind`), prints `listening on
/// http(s)://HOST:PORT` on stderr, and serves `state` until SIGTERM/SIGINT; in-flight requests
/// then have [`SHUTDOWN_GRACE`] to finish. The error is one line.
pub async fn serve_until_signal(
    bind: SocketAddr,
    metrics_bind: Option<SocketAddr>,
    state: HttpState,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
) -> Result<(), String> {
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    if let Some(addr) = metrics_bind {
        let metrics_listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))?;
        let metrics_addr = metrics_listener
            .local_addr()
            .map_err(|e| format!("cannot read the metrics address: {e}"))?;
        let metrics_app = metrics::router(state.metrics());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(metrics_listener, metrics_app).await {
                tracing::error!(error = %e, "metrics listener failed");
            }
        });
        tracing::info!(addr = %metrics_addr, "serving Prometheus metrics at /metrics");
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!("listening on {scheme}://{local}");

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let serving = serve(listener, router(state), tls, stopped(stop_rx.clone()));
    let grace = async {
        stopped(stop_rx).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        r = serving => r.map_err(|e| format!("HTTP server failed: {e}")),
        () = grace => {
            tracing::warn!("requests still running after the shutdown grace period; stopping anyway");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_transport_kinds_change_the_status() {
        assert_eq!(status_for(Kind::ParseError), StatusCode::BAD_REQUEST);
        assert_eq!(status_for(Kind::InvalidRequest), StatusCode::BAD_REQUEST);
        assert_eq!(status_for(Kind::Unauthenticated), StatusCode::UNAUTHORIZED);
        assert_eq!(status_for(Kind::ScopesDenied), StatusCode::FORBIDDEN);
        assert_eq!(status_for(Kind::RateLimited), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            status_for(Kind::Unavailable),
            StatusCode::SERVICE_UNAVAILABLE
        );
        for k in [
            Kind::MethodNotFound,
            Kind::InvalidArgs,
            Kind::NotFound,
            Kind::Conflict,
            Kind::VaultLocked,
            Kind::Internal,
            Kind::External,
        ] {
            assert_eq!(status_for(k), StatusCode::OK, "{k:?}");
        }
    }

    #[test]
    fn bases() {
        assert_eq!(normalize_base("").unwrap(), "");
        assert_eq!(normalize_base("/").unwrap(), "");
        assert_eq!(normalize_base("/kb/").unwrap(), "/kb");
        assert_eq!(normalize_base("kb/v1").unwrap(), "/kb/v1");
        for bad in ["/a//b", "/{id}", "/a b", "/*x", "/../x"] {
            assert!(normalize_base(bad).is_err(), "{bad}");
        }
    }
}
