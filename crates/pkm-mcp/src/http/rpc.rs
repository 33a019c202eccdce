//! `POST <base>/mcp` and `DELETE <base>/mcp`: body limits, JSON-RPC framing (single and batch),
//! tokens, sessions and rate limits around `StratumServer::handle`, and the HTTP status of the
//! answer (see [`super::status_for`]).

use std::future::poll_fn;
use std::pin::Pin;

use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::session::Refused;
use super::{
    Auth, BODY_MAX_BYTES, BODY_READ_TIMEOUT, ClientAddr, Door, HttpState, error_response, fleet,
    json_response, status_for, with_retry_after,
};
use crate::errors::{Kind, McpError};
use crate::oauth::{Refusal, looks_like_jwt};
use crate::protocol::Protocol;
use crate::scope::Scope;
use crate::server::{Caller, is_notification, opens_session, scope_needed, tool_named};
use crate::tokens::Principal;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// How much of an oversized body is read and dropped so the client sees the 413 rather than a
/// reset connection; beyond this the connection is closed.
const DRAIN_MAX_BYTES: usize = 4 * BODY_MAX_BYTES;

/// One JSON-RPC message of the body, classified.
enum Message {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response from the client (the server sends no requests, so there is nothing to match).
    Reply,
    Invalid {
        id: Value,
        why: &'static str,
    },
}

impl Message {
    fn parse(v: Value) -> Message {
        let Value::Object(mut o) = v else {
            return Message::Invalid {
                id: Value::Null,
                why: "a JSON-RPC message must be an object",
            };
        };
        let id = o.remove("id");
        let id_ok = matches!(
            id,
            None | Some(Value::String(_) | Value::Number(_) | Value::Null)
        );
        let shown_id = if id_ok {
            id.clone().unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Message::Invalid {
                id: shown_id,
                why: "jsonrpc must be \"2.0\"",
            };
        }
        if !id_ok {
            return Message::Invalid {
                id: Value::Null,
                why: "id must be a string, a number or null",
            };
        }
        match o.remove("method") {
            Some(Value::String(method)) => {
                let params = match o.remove("params") {
                    None | Some(Value::Null) => None,
                    Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
                    Some(_) => {
                        return Message::Invalid {
                            id: shown_id,
                            why: "params must be an object or an array",
                        };
                    }
                };
                match id {
                    Some(id) => Message::Request { id, method, params },
                    None => Message::Notification { method, params },
                }
            }
            Some(_) => Message::Invalid {
                id: shown_id,
                why: "method must be a string",
            },
            None if id.is_some() && (o.contains_key("result") || o.contains_key("error")) => {
                Message::Reply
            }
            None => Message::Invalid {
                id: shown_id,
                why: "a request needs a method",
            },
        }
    }

    fn is_request(&self, pred: impl Fn(&str) -> bool) -> bool {
        matches!(self, Message::Request { method, .. } if pred(method))
    }
}

/// Who sent the request, as far as the Authorization header says.
struct Identity {
    /// False with `--no-auth`: every caller holds every scope.
    auth: bool,
    principal: Option<Principal>,
    /// A token was presented and is unknown or revoked.
    rejected: bool,
    /// Why an OAuth access token was refused (for `error_description`).
    why: Option<String>,
}

impl Identity {
    fn token_name(&self) -> Option<&str> {
        self.principal.as_ref().map(|p| p.name.as_str())
    }

    /// What sessions are bound to and rate limits keyed on: the token's name or the subject.
    fn key(&self) -> Option<String> {
        self.principal.as_ref().map(Principal::key)
    }

    fn caller(&self, protocol: Protocol) -> Caller {
        Caller {
            // With auth on, a caller without a token (only `initialize` gets this far) holds nothing.
            scopes: self.auth.then(|| {
                self.principal
                    .as_ref()
                    .map(|p| p.scopes.clone())
                    .unwrap_or_default()
            }),
            token_name: self.token_name().map(str::to_owned),
            protocol,
        }
    }
}

/// The token of `Authorization: Bearer <t>` or `Authorization: Stratum-MCP <t>`.
fn presented_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let known = scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("stratum-mcp");
    let token = token.trim();
    (known && !token.is_empty()).then(|| token.to_owned())
}

async fn identify(state: &HttpState, headers: &HeaderMap) -> Identity {
    let verifier = match &state.shared.auth {
        Auth::Disabled => {
            return Identity {
                auth: false,
                principal: None,
                rejected: false,
                why: None,
            };
        }
        Auth::Tokens(v) => std::sync::Arc::clone(v),
    };
    let Some(token) = presented_token(headers) else {
        return Identity {
            auth: true,
            principal: None,
            rejected: false,
            why: None,
        };
    };
    // A JWT goes to the issuer's keys; anything else (a PAT) to the token store.
    if let Some(oauth) = &state.shared.oauth
        && looks_like_jwt(&token)
    {
        return match oauth.verify(&token).await {
            Ok(p) => {
                tracing::Span::current().record("token", p.key().as_str());
                Identity {
                    auth: true,
                    principal: Some(p),
                    rejected: false,
                    why: None,
                }
            }
            Err(Refusal(why)) => {
                tracing::info!(reason = %why, "OAuth access token refused");
                Identity {
                    auth: true,
                    principal: None,
                    rejected: true,
                    why: Some(why),
                }
            }
        };
    }
    // The verifier may re-read the token store from disk.
    let principal = tokio::task::spawn_blocking(move || verifier.verify(&token))
        .await
        .ok()
        .flatten();
    let rejected = principal.is_none();
    if let Some(p) = &principal {
        tracing::Span::current().record("token", p.name.as_str());
    }
    Identity {
        auth: true,
        principal,
        rejected,
        why: None,
    }
}

enum ReadError {
    TooLarge,
    Timeout,
    Broken,
}

/// Reads the body up to [`BODY_MAX_BYTES`]; an oversized one is drained (within limits) first.
async fn read_body(mut body: Body) -> Result<Vec<u8>, ReadError> {
    let read = async {
        let mut buf = Vec::new();
        let mut seen = 0usize;
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let Ok(data) = frame.map_err(|_| ReadError::Broken)?.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if seen > BODY_MAX_BYTES {
                if seen > DRAIN_MAX_BYTES {
                    return Err(ReadError::TooLarge);
                }
                buf = Vec::new();
                continue;
            }
            buf.extend_from_slice(&data);
        }
        if seen > BODY_MAX_BYTES {
            Err(ReadError::TooLarge)
        } else {
            Ok(buf)
        }
    };
    tokio::time::timeout(BODY_READ_TIMEOUT, read)
        .await
        .unwrap_or(Err(ReadError::Timeout))
}

fn too_large() -> Response {
    let e = McpError::new(
        Kind::InvalidRequest,
        "The request body is over the 2 MiB limit",
    )
    .with_hint("Send smaller messages; split large notes or batches.");
    error_response(StatusCode::PAYLOAD_TOO_LARGE, &e)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

fn error_entry(id: Value, e: &McpError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()})
}

/// A quoted-string parameter of `WWW-Authenticate` (RFC 9110 §11.2): printable ASCII without `"`
/// and `\`.
fn quoted(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

fn space_separated(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The 401 challenge: with OAuth, where the resource metadata is and which scopes to ask for
/// (MCP authorization; RFC 9728 §5.1, RFC 6750 §3), and why a presented token was refused.
fn unauthorized_challenge(state: &HttpState, why: Option<&str>) -> HeaderValue {
    let Some(oauth) = &state.shared.oauth else {
        return HeaderValue::from_static("Bearer realm=\"stratum-mcp\"");
    };
    let mut v = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{}\"",
        quoted(&oauth.metadata_url()),
        space_separated(&Scope::PERSONAL)
    );
    if let Some(why) = why {
        v.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{}\"",
            quoted(why)
        ));
    }
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// The 403 challenge of a call lacking scopes (RFC 6750 §3.1): the scopes the caller holds plus
/// those the refused calls need, so that a new authorization keeps what the old one granted.
fn insufficient_scope_challenge(
    state: &HttpState,
    identity: &Identity,
    needed: &[Scope],
) -> Option<HeaderValue> {
    let oauth = state.shared.oauth.as_ref()?;
    let mut scopes: Vec<Scope> = identity
        .principal
        .as_ref()
        .map(|p| p.scopes.clone())
        .unwrap_or_default();
    scopes.extend_from_slice(needed);
    scopes.sort();
    scopes.dedup();
    let v = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"the call needs {}\"",
        space_separated(&scopes),
        quoted(&oauth.metadata_url()),
        space_separated(needed)
    );
    HeaderValue::from_str(&v).ok()
}

/// Answers every request of the body with the same error (401, or a session problem); `why`
/// says why a presented OAuth token was refused.
fn refuse(
    state: &HttpState,
    batch: bool,
    messages: &[Message],
    e: &McpError,
    status: StatusCode,
    why: Option<&str>,
) -> Response {
    state.shared.metrics.error(e.kind);
    let ids: Vec<Value> = messages
        .iter()
        .filter_map(|m| {
            if let Message::Request { id, .. } = m {
                Some(id.clone())
            } else {
                None
            }
        })
        .collect();
    let body = match (batch, ids.as_slice()) {
        (true, [_, ..]) => Value::Array(ids.into_iter().map(|id| error_entry(id, e)).collect()),
        (_, [id, ..]) => error_entry(id.clone(), e),
        (_, []) => error_entry(Value::Null, e),
    };
    let mut r = with_retry_after(json_response(status, &body), e);
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, unauthorized_challenge(state, why));
    }
    r
}

/// The revision of the live session the `Mcp-Session-Id` value names, when `token` may use it
/// (marks it used).
async fn touch_session(
    door: &Door,
    id: &HeaderValue,
    token: Option<&str>,
) -> Result<Protocol, Refused> {
    let id = id.to_str().map_err(|_| Refused::Unknown)?;
    door.sessions.touch(id, token).await
}

/// The answer while the fleet's Redis is unreachable and `--redis-fail closed` (HTTP 503).
fn unavailable() -> McpError {
    McpError::new(
        Kind::Unavailable,
        "The fleet's shared store (Redis) is unreachable",
    )
    .retry_after(1)
}

/// The error for a refused `Mcp-Session-Id`, and its HTTP status.
fn session_refused(refused: Refused) -> (McpError, StatusCode) {
    match refused {
        Refused::Unknown | Refused::OtherToken => (
            McpError::new(Kind::InvalidRequest, "Unknown or ended session")
                .with_hint("Start a new session with initialize."),
            StatusCode::NOT_FOUND,
        ),
        Refused::Unavailable => (unavailable(), StatusCode::SERVICE_UNAVAILABLE),
    }
}

fn rate_key(identity: &Identity, parts: &Parts) -> String {
    match identity.key() {
        Some(key) => key,
        None => match parts.extensions.get::<ConnectInfo<ClientAddr>>() {
            Some(ConnectInfo(ClientAddr(addr))) => format!("ip:{}", addr.ip()),
            None => "ip:unknown".to_owned(),
        },
    }
}

/// One request through the rate limiter and the router.
async fn dispatch(
    state: &HttpState,
    door: &Door,
    caller: &Caller,
    key: &str,
    method: &str,
    params: Option<Value>,
) -> Result<Value, McpError> {
    if let Some(tier) = scope_needed(method, params.as_ref()) {
        state
            .shared
            .limiter
            .check(key, tier)
            .await
            .map_err(|refusal| match refusal {
                fleet::Refusal::Limited(secs) => {
                    tracing::info!(retry_after = secs, "rate limit exceeded");
                    McpError::new(Kind::RateLimited, "Rate limit exceeded").retry_after(secs)
                }
                fleet::Refusal::Unavailable => unavailable(),
            })?;
    }
    let result = door.server.handle(method, params, caller).await?;
    // A notification method sent with an id still gets an (empty) answer.
    Ok(result.unwrap_or_else(|| json!({})))
}

/// How much a batch entry's error weighs when picking the batch's HTTP status.
fn batch_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Unavailable => 4,
        Kind::Unauthenticated => 3,
        Kind::ScopesDenied => 2,
        Kind::RateLimited => 1,
        _ => 0,
    }
}

/// `POST <prefix>/mcp` of the `vault`th door: the body's messages, admitted (protocol, token,
/// vault, session), each answered by the router, in one response.
pub(super) async fn post(state: HttpState, vault: usize, req: Request) -> Response {
    let door = &state.shared.doors[vault];
    let (parts, body) = req.into_parts();
    let (batch, messages) = match read_messages(&state, &parts, body).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let (identity, protocol) = match admit(&state, door, &parts, batch, &messages).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    record_span(&messages);
    let key = rate_key(&identity, &parts);
    answer(&state, door, &identity, protocol, &key, batch, messages).await
}

/// The body as JSON-RPC messages, and whether it was a batch; or the response refusing it (size,
/// media type, timeout, JSON, an empty batch, a single message that is not JSON-RPC).
async fn read_messages(
    state: &HttpState,
    parts: &Parts,
    body: Body,
) -> Result<(bool, Vec<Message>), Response> {
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_MAX_BYTES as u64) {
        if declared.is_some_and(|n| n <= DRAIN_MAX_BYTES as u64) {
            let _ = read_body(body).await;
        }
        return Err(too_large());
    }
    if !is_json(&parts.headers) {
        let e = McpError::new(
            Kind::InvalidRequest,
            "Content-Type must be application/json",
        )
        .with_hint("POST JSON-RPC as application/json.");
        return Err(error_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, &e));
    }
    let bytes = match read_body(body).await {
        Ok(b) => b,
        Err(ReadError::TooLarge) => return Err(too_large()),
        Err(ReadError::Timeout) => {
            return Err(error_response(
                StatusCode::REQUEST_TIMEOUT,
                &McpError::new(
                    Kind::InvalidRequest,
                    "The request body was not sent in time",
                ),
            ));
        }
        Err(ReadError::Broken) => {
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                &McpError::new(Kind::InvalidRequest, "The request body could not be read"),
            ));
        }
    };
    let parsed: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            state.shared.metrics.error(Kind::ParseError);
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                &McpError::new(Kind::ParseError, format!("Parse error: {e}")),
            ));
        }
    };
    let (batch, values) = match parsed {
        Value::Array(a) if a.is_empty() => {
            state.shared.metrics.error(Kind::InvalidRequest);
            return Err(error_response(
                StatusCode::BAD_REQUEST,
                &McpError::new(
                    Kind::InvalidRequest,
                    "An empty batch is not a valid request",
                ),
            ));
        }
        Value::Array(a) => (true, a),
        v => (false, vec![v]),
    };
    let messages: Vec<Message> = values.into_iter().map(Message::parse).collect();
    if !batch && let Some(Message::Invalid { id, why }) = messages.first() {
        state.shared.metrics.error(Kind::InvalidRequest);
        let e = McpError::new(Kind::InvalidRequest, format!("Invalid request: {why}"));
        return Err(json_response(
            StatusCode::BAD_REQUEST,
            &error_entry(id.clone(), &e),
        ));
    }
    Ok((batch, messages))
}

/// Who is calling and in which revision; or the response refusing the body (an unknown
/// `MCP-Protocol-Version`, a missing or refused token, a vault the token may not use, an
/// unknown or missing session).
async fn admit(
    state: &HttpState,
    door: &Door,
    parts: &Parts,
    batch: bool,
    messages: &[Message],
) -> Result<(Identity, Protocol), Response> {
    let deny =
        |d: Box<Denied>| refuse(state, batch, messages, &d.error, d.status, d.why.as_deref());
    // The revision the client says it speaks; without the header, the session's (below).
    let announced = announced_protocol(&parts.headers).map_err(deny)?;
    let identity = identify(state, &parts.headers).await;
    let needs_token = messages.iter().any(|m| m.is_request(|m| !opens_session(m)));
    token_admits(&identity, needs_token).map_err(deny)?;
    vault_admits(door, &identity).map_err(deny)?;
    let opening = messages.iter().any(|m| m.is_request(opens_session));
    let agreed = match opening {
        true => None,
        false => session_protocol(door, &parts.headers, &identity, needs_token)
            .await
            .map_err(deny)?,
    };
    Ok((identity, announced.or(agreed).unwrap_or(Protocol::ASSUMED)))
}

/// Why [`admit`] refuses a body: the error, its HTTP status, and what was wrong with the token.
struct Denied {
    error: McpError,
    status: StatusCode,
    why: Option<String>,
}

impl Denied {
    fn new(error: McpError, status: StatusCode) -> Box<Denied> {
        Box::new(Denied {
            error,
            status,
            why: None,
        })
    }
}

/// The revision of `MCP-Protocol-Version`, `None` without the header; an unknown one is refused.
fn announced_protocol(headers: &HeaderMap) -> Result<Option<Protocol>, Box<Denied>> {
    let Some(v) = headers.get(PROTOCOL_HEADER) else {
        return Ok(None);
    };
    match v.to_str().ok().and_then(Protocol::parse) {
        Some(p) => Ok(Some(p)),
        None => Err(Denied::new(
            McpError::new(Kind::InvalidRequest, "Unsupported MCP-Protocol-Version")
                .with_hint(format!("This server speaks {}.", Protocol::listed())),
            StatusCode::BAD_REQUEST,
        )),
    }
}

/// With authentication on: a presented token must be valid, and a body of more than `initialize`
/// needs one.
fn token_admits(identity: &Identity, needs_token: bool) -> Result<(), Box<Denied>> {
    if !identity.auth || !(identity.rejected || (needs_token && identity.principal.is_none())) {
        return Ok(());
    }
    let message = if identity.rejected {
        "Invalid or revoked token"
    } else {
        "Authentication required"
    };
    let mut e = McpError::new(Kind::Unauthenticated, message);
    if let Some(why) = &identity.why {
        e = e.with_hint(format!("The access token was refused: {why}."));
    }
    Err(Box::new(Denied {
        error: e,
        status: StatusCode::UNAUTHORIZED,
        why: identity.why.clone(),
    }))
}

/// On a server of several vaults, the token may use this door's vault.
fn vault_admits(door: &Door, identity: &Identity) -> Result<(), Box<Denied>> {
    match (&door.name, &identity.principal) {
        (Some(vault), Some(principal)) if !principal.may_use(vault) => Err(Denied::new(
            McpError::new(
                Kind::ScopesDenied,
                format!("This token may not use the vault {vault}"),
            )
            .with_hint("Use a token created with --vault-access naming this vault."),
            StatusCode::FORBIDDEN,
        )),
        _ => Ok(()),
    }
}

/// The revision agreed by the session `Mcp-Session-Id` names; `None` without the header where
/// none is needed. An unknown session, or none where one is needed, is refused.
async fn session_protocol(
    door: &Door,
    headers: &HeaderMap,
    identity: &Identity,
    needs_token: bool,
) -> Result<Option<Protocol>, Box<Denied>> {
    match headers.get(SESSION_HEADER) {
        Some(id) => match touch_session(door, id, identity.key().as_deref()).await {
            Ok(agreed) => Ok(Some(agreed)),
            Err(refused) => {
                let (e, status) = session_refused(refused);
                Err(Denied::new(e, status))
            }
        },
        None if identity.auth && needs_token => Err(Denied::new(
            McpError::new(Kind::InvalidRequest, "Missing Mcp-Session-Id header").with_hint(
                "Send initialize first and echo its Mcp-Session-Id header on every later request.",
            ),
            StatusCode::BAD_REQUEST,
        )),
        None => Ok(None),
    }
}

/// Names the request's method (and tool) on the request's span, for the access log.
fn record_span(messages: &[Message]) {
    let span = tracing::Span::current();
    if let [Message::Request { method, params, .. }] = messages {
        span.record("rpc", method.as_str());
        if let Some(tool) = tool_named(method, params.as_ref()) {
            span.record("tool", tool);
        }
    } else {
        span.record("rpc", "batch");
    }
}

/// Each message through the router, and the one response: the HTTP status of a single answer or
/// of the batch's worst refusal, `Mcp-Session-Id` after `initialize`, `Retry-After`, the
/// `insufficient_scope` challenge.
async fn answer(
    state: &HttpState,
    door: &Door,
    identity: &Identity,
    protocol: Protocol,
    key: &str,
    batch: bool,
    messages: Vec<Message>,
) -> Response {
    let caller = identity.caller(protocol);
    let mut answers = Answers::default();
    for m in messages {
        match m {
            Message::Invalid { id, why } => {
                state.shared.metrics.error(Kind::InvalidRequest);
                answers.entries.push(error_entry(
                    id,
                    &McpError::new(Kind::InvalidRequest, format!("Invalid request: {why}")),
                ));
            }
            Message::Reply => {}
            Message::Notification { method, params } => {
                // Only protocol notifications do anything; a method call without an id is dropped.
                if is_notification(&method) {
                    let _ = door.server.handle(&method, params, &caller).await;
                }
            }
            Message::Request { id, method, params } => {
                let needs = scope_needed(&method, params.as_ref()).flatten();
                let opening = opens_session(&method) && answers.session.is_none();
                let mut answered = dispatch(state, door, &caller, key, &method, params).await;
                if let (true, Ok(result)) = (opening, &answered) {
                    match open_session(door, identity, result).await {
                        Ok(id) => answers.session = Some(id),
                        Err(e) => answered = Err(e),
                    }
                }
                match answered {
                    Ok(result) => answers
                        .entries
                        .push(json!({"jsonrpc": "2.0", "id": id, "result": result})),
                    Err(e) => {
                        state.shared.metrics.error(e.kind);
                        answers.refused(id, &e, needs);
                    }
                }
            }
        }
    }
    answers.into_response(state, identity, batch)
}

/// Opens the session an `initialize` answered with `result` starts, in the revision it agreed.
async fn open_session(
    door: &Door,
    identity: &Identity,
    result: &Value,
) -> Result<String, McpError> {
    let agreed = result["protocolVersion"].as_str().and_then(Protocol::parse);
    door.sessions
        .open(identity.key(), agreed.unwrap_or(Protocol::LATEST))
        .await
        .map_err(|refused| session_refused(refused).0)
}

/// The answers to a body's messages, and what the response's status and headers need of them.
#[derive(Default)]
struct Answers {
    entries: Vec<Value>,
    /// The status of the last refusal (a single message's).
    single_status: Option<StatusCode>,
    /// The weightiest refusal of a batch ([`batch_rank`]).
    worst: Option<Kind>,
    retry_after: Option<u64>,
    session: Option<String>,
    /// The scopes refused calls needed, for the `insufficient_scope` challenge.
    scopes_needed: Vec<Scope>,
}

impl Answers {
    /// A request refused with `e`; `needs` is the scope it needed.
    fn refused(&mut self, id: Value, e: &McpError, needs: Option<Scope>) {
        self.single_status = Some(status_for(e.kind));
        if e.kind == Kind::ScopesDenied {
            self.scopes_needed.extend(needs);
        }
        if self
            .worst
            .is_none_or(|w| batch_rank(e.kind) > batch_rank(w))
        {
            self.worst = Some(e.kind);
        }
        if let Some(s) = e
            .retry_after_seconds
            .filter(|_| matches!(e.kind, Kind::RateLimited | Kind::Unavailable))
        {
            self.retry_after = Some(self.retry_after.map_or(s, |r| r.max(s)));
        }
        self.entries.push(error_entry(id, e));
    }

    /// The one response: 202 when nothing is answered, else the answers with their status and
    /// headers.
    fn into_response(mut self, state: &HttpState, identity: &Identity, batch: bool) -> Response {
        let mut response = if self.entries.is_empty() {
            StatusCode::ACCEPTED.into_response()
        } else if batch {
            let status = self
                .worst
                .filter(|k| batch_rank(*k) > 0)
                .map_or(StatusCode::OK, status_for);
            json_response(status, &Value::Array(self.entries))
        } else {
            let status = self.single_status.unwrap_or(StatusCode::OK);
            json_response(status, &self.entries.pop().unwrap_or(Value::Null))
        };
        let headers = response.headers_mut();
        if let Some(id) = self.session.and_then(|s| HeaderValue::from_str(&s).ok()) {
            headers.insert(SESSION_HEADER, id);
        }
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if response.status() == StatusCode::FORBIDDEN
            && let Some(challenge) =
                insufficient_scope_challenge(state, identity, &self.scopes_needed)
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// `DELETE <prefix>/mcp` of the `vault`th door: ends the session named by `Mcp-Session-Id`
/// (204), 404 when unknown there.
pub(super) async fn delete(state: HttpState, vault: usize, req: Request) -> Response {
    let door = &state.shared.doors[vault];
    let identity = identify(&state, req.headers()).await;
    if identity.rejected {
        return refuse(
            &state,
            false,
            &[],
            &McpError::new(Kind::Unauthenticated, "Invalid or revoked token"),
            StatusCode::UNAUTHORIZED,
            identity.why.as_deref(),
        );
    }
    let Some(id) = req.headers().get(SESSION_HEADER) else {
        let e = McpError::new(Kind::InvalidRequest, "Missing Mcp-Session-Id header")
            .with_hint("Name the session to end.");
        return error_response(StatusCode::BAD_REQUEST, &e);
    };
    let ended = match id.to_str() {
        Ok(id) => door.sessions.end(id, identity.key().as_deref()).await,
        Err(_) => Err(Refused::Unknown),
    };
    match ended {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refused) => {
            let (e, status) = session_refused(refused);
            error_response(status, &e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let kind = |v: Value| match Message::parse(v) {
            Message::Request { .. } => "request",
            Message::Notification { .. } => "notification",
            Message::Reply => "reply",
            Message::Invalid { .. } => "invalid",
        };
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
            "request"
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": "a", "method": "x", "params": []})),
            "request"
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            "notification"
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": 3, "result": {}})),
            "reply"
        );
        for bad in [
            json!(1),
            json!({"id": 1, "method": "ping"}),
            json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": {}, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": 3}),
            json!({"jsonrpc": "2.0", "id": 1}),
        ] {
            assert_eq!(kind(bad.clone()), "invalid", "{bad}");
        }
    }

    #[test]
    fn both_authorization_schemes() {
        let mut h = HeaderMap::new();
        assert_eq!(presented_token(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(presented_token(&h).as_deref(), Some("abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Stratum-MCP  xyz "),
        );
        assert_eq!(presented_token(&h).as_deref(), Some("xyz"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic dXNlcg=="),
        );
        assert_eq!(presented_token(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(presented_token(&h), None);
    }
}
