//! OAuth 2.1 resource server (MCP authorization, revisions 2025-06-18 and 2025-11-25; ADR-0010):
//! `--oauth-issuer URL --oauth-audience URI` make the HTTP door accept JWT access tokens issued by
//! that authorization server for that audience, beside personal access tokens.
//!
//! - The issuer's metadata is found by RFC 8414 / OpenID Connect discovery; its `jwks_uri` gives the
//!   signing keys. Both are fetched at start and kept; the keys are refetched in the background
//!   when older than [`KEYS_MAX_AGE`], and at once when a token names a key id (`kid`) not in the
//!   set, at most once per [`UNKNOWN_KID_REFETCH_INTERVAL`] so that made-up key ids cannot make the
//!   server hammer the issuer. A refetch replaces the set: a key the issuer stopped publishing is
//!   refused from then on.
//! - A token passes when it is a JWS signed by one of those keys with an asymmetric algorithm
//!   (never `none`, never HMAC), `iss` is the issuer exactly, `aud` holds the audience (RFC 8707),
//!   `exp` is in the future and `nbf`, when present, in the past (both with [`LEEWAY_SECONDS`]), and
//!   `sub` names the subject.
//! - Scopes come from the `scope` claim (a space-separated string, RFC 9068) or `scp` (an array, or
//!   a string); names that are not `kb:*` scopes are ignored (contract §7.3).
//! - No token introspection: a JWT is checked locally, so a revoked-but-unexpired token stays
//!   valid until its `exp` (keep access-token lifetimes short at the issuer).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parking_lot::RwLock;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::scope::Scope;
use crate::tokens::{Credential, Principal};

/// Keys older than this are refetched in the background (the request goes on with the old set).
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// An unknown `kid` refetches the keys at most this often.
pub const UNKNOWN_KID_REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// A background refresh (stale keys, or an issuer that was down) starts at most this often.
const BACKGROUND_RETRY: Duration = Duration::from_secs(30);
/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 30;
/// How long one request to the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Discovery documents and key sets larger than this are refused.
const FETCH_MAX_BYTES: usize = 1024 * 1024;
/// The path RFC 9728 reserves for protected resource metadata.
pub const PRM_PATH: &str = "/.well-known/oauth-protected-resource";

/// Signature algorithms a token may use: asymmetric ones only.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Whether `url` may be fetched or trusted: `https`, or `http` to a loopback host (tests, local
/// issuers on the same machine).
fn secure_or_loopback(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => url.host_str().is_some_and(|h| {
            let h = h.trim_start_matches('[').trim_end_matches(']');
            h.eq_ignore_ascii_case("localhost")
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }),
        _ => false,
    }
}

/// Checks `--oauth-issuer` and `--oauth-audience`; the error is one line.
pub fn check_flags(issuer: &str, audience: &str) -> Result<(), String> {
    let iss =
        Url::parse(issuer).map_err(|e| format!("--oauth-issuer {issuer:?} is not a URL: {e}"))?;
    if !secure_or_loopback(&iss) {
        return Err(format!(
            "--oauth-issuer {issuer:?} must be an https URL (http only to a loopback host)"
        ));
    }
    if iss.query().is_some() || iss.fragment().is_some() {
        return Err(format!(
            "--oauth-issuer {issuer:?} must not have a query or fragment (RFC 8414)"
        ));
    }
    let aud = Url::parse(audience)
        .map_err(|e| format!("--oauth-audience {audience:?} is not an absolute URI: {e}"))?;
    if !secure_or_loopback(&aud) {
        return Err(format!(
            "--oauth-audience {audience:?} must be this server's https URL (http only on a loopback host), \
             e.g. https://kb.example.com/mcp"
        ));
    }
    if aud.fragment().is_some() || aud.query().is_some() {
        return Err(format!(
            "--oauth-audience {audience:?} must not have a query or fragment (RFC 8707)"
        ));
    }
    // The metadata is served at a path made from the audience's: keep it a plain path.
    let plain = aud.path().split('/').skip(1).all(|seg| {
        seg != "."
            && seg != ".."
            && seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    });
    if !plain {
        return Err(format!(
            "--oauth-audience {audience:?}: its path may hold only letters, digits, '-', '.', '_', '~'"
        ));
    }
    Ok(())
}

/// Why a bearer token was refused (for the log and `error_description`; never holds the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Refusal {
    fn new(s: impl Into<String>) -> Refusal {
        Refusal(s.into())
    }
}

/// The `scope` or `scp` claim: a space-separated string or an array of names.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

impl ScopeClaim {
    fn names(&self) -> Vec<&str> {
        match self {
            ScopeClaim::Text(s) => s.split_ascii_whitespace().collect(),
            ScopeClaim::List(v) => v.iter().flat_map(|s| s.split_ascii_whitespace()).collect(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
}

/// The `kb:*` scopes a token's claims grant; other names are ignored.
fn granted_scopes(claims: &Claims) -> Vec<Scope> {
    let mut scopes: Vec<Scope> = claims
        .scope
        .iter()
        .chain(claims.scp.iter())
        .flat_map(ScopeClaim::names)
        .filter_map(|n| n.parse().ok())
        .collect();
    scopes.sort();
    scopes.dedup();
    scopes
}

/// One verification key of the issuer's set.
struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one: the only algorithm the key is used with.
    alg: Option<Algorithm>,
    family: Family,
    key: DecodingKey,
}

impl Key {
    /// Whether this key may verify a signature made with `alg`.
    fn fits(&self, alg: Algorithm) -> bool {
        self.alg.is_none_or(|a| a == alg)
            && matches!(
                (self.family, alg),
                (
                    Family::Rsa,
                    Algorithm::RS256
                        | Algorithm::RS384
                        | Algorithm::RS512
                        | Algorithm::PS256
                        | Algorithm::PS384
                        | Algorithm::PS512
                ) | (Family::Ec, Algorithm::ES256 | Algorithm::ES384)
                    | (Family::Ed, Algorithm::EdDSA)
            )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Rsa,
    Ec,
    Ed,
}

/// The signing keys as last fetched.
#[derive(Default)]
struct KeySet {
    keys: Vec<Arc<Key>>,
    fetched: Option<Instant>,
}

/// Parses a JWK Set, keeping the public signature keys it can use; other entries (encryption
/// keys, symmetric keys, unknown types) are skipped rather than failing the set.
fn parse_jwks(doc: &Value) -> Vec<Arc<Key>> {
    let mut out = Vec::new();
    for raw in doc["keys"].as_array().into_iter().flatten() {
        if raw
            .get("use")
            .and_then(Value::as_str)
            .is_some_and(|u| u != "sig")
        {
            continue;
        }
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let family = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Family::Rsa,
            AlgorithmParameters::EllipticCurve(_) => Family::Ec,
            AlgorithmParameters::OctetKeyPair(_) => Family::Ed,
            // A shared secret is never a key of a public issuer.
            AlgorithmParameters::OctetKey(_) => continue,
        };
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(a) => match a.to_string().parse::<Algorithm>() {
                Ok(a) if ALGORITHMS.contains(&a) => Some(a),
                // An encryption or HMAC algorithm: not a signature key for us.
                _ => continue,
            },
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        out.push(Arc::new(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            family,
            key,
        }));
    }
    out
}

/// A minimal HTTPS (or loopback HTTP) GET client for discovery documents and key sets: one
/// connection per fetch (fetches are rare), HTTP/1.1, rustls with the ring provider and the
/// operating system's root certificates, no redirects, bounded in time and size.
struct Fetcher {
    tls: tokio_rustls::TlsConnector,
}

impl Fetcher {
    fn new() -> Result<Fetcher, String> {
        use tokio_rustls::rustls::{ClientConfig, RootCertStore};
        let mut roots = RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for e in &found.errors {
            tracing::warn!(error = %e, "cannot load some of the system's root certificates");
        }
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            tracing::warn!(
                "no system root certificates found: https fetches from the OAuth issuer will fail (install ca-certificates)"
            );
        }
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot set up TLS for --oauth-issuer: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Fetcher {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        })
    }

    /// One request/response on an open connection.
    async fn exchange<S>(
        io: S,
        req: hyper::Request<http_body_util::Empty<hyper::body::Bytes>>,
    ) -> Result<(u16, Vec<u8>), String>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use http_body_util::BodyExt;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = http_body_util::Limited::new(resp.into_body(), FETCH_MAX_BYTES)
            .collect()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
            .to_bytes();
        Ok((status, body.to_vec()))
    }

    /// GETs `url`: its status and body.
    async fn get(&self, url: &Url) -> Result<(u16, Vec<u8>), String> {
        let host = url.host_str().ok_or("no host")?;
        let port = url.port_or_known_default().ok_or("no port")?;
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        let mut target = url.path().to_owned();
        if let Some(q) = url.query() {
            target.push('?');
            target.push_str(q);
        }
        let req = hyper::Request::get(target)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::ACCEPT, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("stratum-mcp/", env!("CARGO_PKG_VERSION")),
            )
            .body(http_body_util::Empty::new())
            .map_err(|e| e.to_string())?;
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let fetch = async {
            let tcp = tokio::net::TcpStream::connect((bare.as_str(), port))
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            if url.scheme() == "https" {
                let name = tokio_rustls::rustls::pki_types::ServerName::try_from(bare.clone())
                    .map_err(|e| format!("bad server name: {e}"))?;
                let tls = self
                    .tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("TLS: {e}"))?;
                Fetcher::exchange(tls, req).await
            } else {
                Fetcher::exchange(tcp, req).await
            }
        };
        tokio::time::timeout(FETCH_TIMEOUT, fetch)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {}s", FETCH_TIMEOUT.as_secs())))
    }
}

/// What fetching remembers between fetches.
#[derive(Default)]
struct FetchState {
    jwks_uri: Option<Url>,
    /// When an unknown `kid` last made us refetch.
    last_forced: Option<Instant>,
}

/// Verifies JWT access tokens of one issuer for one audience.
pub struct OAuthVerifier {
    issuer: String,
    audience: String,
    fetcher: Fetcher,
    keys: RwLock<KeySet>,
    fetch: tokio::sync::Mutex<FetchState>,
    refreshing: AtomicBool,
    /// When the last background refresh started: one at most every [`BACKGROUND_RETRY`].
    last_background: parking_lot::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl OAuthVerifier {
    /// A verifier for `issuer` and `audience` (checked by [`check_flags`] first). Fetches nothing
    /// yet: call [`OAuthVerifier::refresh`] once at start.
    pub fn new(issuer: &str, audience: &str) -> Result<OAuthVerifier, String> {
        check_flags(issuer, audience)?;
        Ok(OAuthVerifier {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            fetcher: Fetcher::new()?,
            keys: RwLock::new(KeySet::default()),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
            refreshing: AtomicBool::new(false),
            last_background: parking_lot::Mutex::new(None),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The URL of this resource's metadata (RFC 9728 §3.1): the well-known path inserted between
    /// the audience's host and its path.
    pub fn metadata_url(&self) -> String {
        match Url::parse(&self.audience) {
            Ok(u) => {
                let path = u.path().trim_end_matches('/');
                let mut origin = u.origin().ascii_serialization();
                origin.push_str(PRM_PATH);
                origin.push_str(path);
                origin
            }
            Err(_) => PRM_PATH.to_owned(),
        }
    }

    /// The path part of [`OAuthVerifier::metadata_url`], which the router serves.
    pub fn metadata_path(&self) -> String {
        Url::parse(&self.audience)
            .map(|u| format!("{PRM_PATH}{}", u.path().trim_end_matches('/')))
            .unwrap_or_else(|_| PRM_PATH.to_owned())
    }

    /// The protected resource metadata document (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        serde_json::json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "scopes_supported": Scope::ALL.map(Scope::as_str),
            "bearer_methods_supported": ["header"],
            "resource_name": "stratum-mcp",
        })
    }

    /// GETs `url` and parses it as a JSON object, within the size and time limits.
    async fn get_json(&self, url: &Url) -> Result<Value, String> {
        if !secure_or_loopback(url) {
            return Err(format!("{url} is neither https nor loopback"));
        }
        let (status, body) = self
            .fetcher
            .get(url)
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !(200..300).contains(&status) {
            return Err(format!("GET {url}: HTTP {status}"));
        }
        let v: Value =
            serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))?;
        if v.is_object() {
            Ok(v)
        } else {
            Err(format!("GET {url}: not a JSON object"))
        }
    }

    /// The metadata URLs to try for the issuer, in the order of MCP authorization 2025-11-25:
    /// RFC 8414 (path inserted), OpenID Connect (path inserted), OpenID Connect (path appended).
    fn discovery_urls(&self) -> Vec<Url> {
        let Ok(iss) = Url::parse(&self.issuer) else {
            return Vec::new();
        };
        let origin = iss.origin().ascii_serialization();
        let path = iss.path().trim_end_matches('/');
        let mut urls = vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
        ];
        if !path.is_empty() {
            urls.push(format!("{origin}{path}/.well-known/openid-configuration"));
        }
        urls.iter().filter_map(|u| Url::parse(u).ok()).collect()
    }

    /// Finds the issuer's `jwks_uri` by discovery.
    async fn discover(&self) -> Result<Url, String> {
        let mut why = Vec::new();
        for url in self.discovery_urls() {
            match self.get_json(&url).await {
                Ok(meta) => {
                    // RFC 8414 §3.3: the metadata's issuer is the configured one, exactly.
                    if meta["issuer"].as_str() != Some(self.issuer.as_str()) {
                        return Err(format!(
                            "{url} names issuer {}, not {:?} (write --oauth-issuer exactly as the provider does)",
                            meta["issuer"], self.issuer
                        ));
                    }
                    let jwks = meta["jwks_uri"]
                        .as_str()
                        .ok_or_else(|| format!("{url} has no jwks_uri"))?;
                    let jwks = Url::parse(jwks).map_err(|e| format!("{url}: jwks_uri: {e}"))?;
                    if !secure_or_loopback(&jwks) {
                        return Err(format!("{url}: jwks_uri {jwks} is not https"));
                    }
                    return Ok(jwks);
                }
                Err(e) => why.push(e),
            }
        }
        Err(format!(
            "no authorization server metadata found for {}: {}",
            self.issuer,
            why.join("; ")
        ))
    }

    /// Fetches the key set (discovering `jwks_uri` first when not known yet) and replaces the
    /// cached one. The caller holds the fetch lock.
    async fn fetch_keys(&self, state: &mut FetchState) -> Result<usize, String> {
        let jwks_uri = match &state.jwks_uri {
            Some(u) => u.clone(),
            None => {
                let u = self.discover().await?;
                state.jwks_uri = Some(u.clone());
                u
            }
        };
        let doc = match self.get_json(&jwks_uri).await {
            Ok(d) => d,
            Err(e) => {
                // The issuer may have moved its keys: discover again next time.
                state.jwks_uri = None;
                return Err(e);
            }
        };
        let keys = parse_jwks(&doc);
        if keys.is_empty() {
            return Err(format!("{jwks_uri} holds no usable signature key"));
        }
        let n = keys.len();
        *self.keys.write() = KeySet {
            keys,
            fetched: Some(Instant::now()),
        };
        Ok(n)
    }

    /// Discovers the issuer and fetches its keys now (at start; failures are logged, and the
    /// next token with an unknown key tries again).
    pub async fn refresh(&self) -> Result<usize, String> {
        let mut state = self.fetch.lock().await;
        let r = self.fetch_keys(&mut state).await;
        match &r {
            Ok(n) => tracing::info!(issuer = %self.issuer, keys = n, "OAuth issuer keys fetched"),
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "cannot fetch the OAuth issuer's keys")
            }
        }
        r
    }

    /// Starts a background refetch when the keys are older than [`KEYS_MAX_AGE`].
    fn refresh_if_stale(self: &Arc<Self>) {
        let stale = self
            .keys
            .read()
            .fetched
            .is_none_or(|t| t.elapsed() >= KEYS_MAX_AGE);
        if !stale {
            return;
        }
        {
            let mut last = self.last_background.lock();
            if last.is_some_and(|t| t.elapsed() < BACKGROUND_RETRY) {
                return;
            }
            if self.refreshing.swap(true, Ordering::AcqRel) {
                return;
            }
            *last = Some(Instant::now());
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let _ = me.refresh().await;
            me.refreshing.store(false, Ordering::Release);
        });
    }

    /// Refetches the keys because a token named an unknown `kid`, unless that was done less than
    /// [`UNKNOWN_KID_REFETCH_INTERVAL`] ago. True when the set may have changed.
    async fn refetch_for_unknown_kid(&self, seen: Option<Instant>) -> bool {
        let mut state = self.fetch.lock().await;
        // Another request refetched while this one waited for the lock: use its result.
        if self.keys.read().fetched != seen {
            return true;
        }
        if state
            .last_forced
            .is_some_and(|t| t.elapsed() < UNKNOWN_KID_REFETCH_INTERVAL)
        {
            return false;
        }
        state.last_forced = Some(Instant::now());
        match self.fetch_keys(&mut state).await {
            Ok(n) => {
                tracing::info!(issuer = %self.issuer, keys = n, "OAuth issuer keys refetched for an unknown key id");
                true
            }
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "cannot refetch the OAuth issuer's keys");
                false
            }
        }
    }

    /// The keys that may have signed a token with this header, and when the set was fetched.
    fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> (Vec<Arc<Key>>, Option<Instant>) {
        let set = self.keys.read();
        let keys = set
            .keys
            .iter()
            .filter(|k| kid.is_none_or(|kid| k.kid.as_deref() == Some(kid)) && k.fits(alg))
            .cloned()
            .collect();
        (keys, set.fetched)
    }

    /// Checks a JWT access token; the principal is named `sub`.
    pub async fn verify(self: &Arc<Self>, token: &str) -> Result<Principal, Refusal> {
        self.refresh_if_stale();
        // `alg: none` and unknown algorithms fail here: the header does not parse.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| Refusal::new(format!("malformed token header: {e}")))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::new(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let (mut keys, seen) = self.candidates(kid, header.alg);
        if keys.is_empty() {
            if self.refetch_for_unknown_kid(seen).await {
                keys = self.candidates(kid, header.alg).0;
            }
            if keys.is_empty() {
                return Err(Refusal::new(match kid {
                    Some(kid) => format!(
                        "no signing key {:?} published by the issuer",
                        kid.chars().take(64).collect::<String>()
                    ),
                    None => "no signing key of the issuer fits the token".to_owned(),
                }));
            }
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECONDS;
        let mut last = Refusal::new("invalid signature");
        for entry in keys {
            match jsonwebtoken::decode::<Claims>(token, &entry.key, &validation) {
                Ok(data) => {
                    let claims = data.claims;
                    if claims.sub.is_empty() {
                        return Err(Refusal::new("empty sub claim"));
                    }
                    return Ok(Principal {
                        scopes: granted_scopes(&claims),
                        name: claims.sub,
                        credential: Credential::OAuth,
                        // The audience is the server; with several vaults OAuth is off.
                        vaults: None,
                    });
                }
                Err(e) => {
                    use jsonwebtoken::errors::ErrorKind as K;
                    last = Refusal::new(match e.kind() {
                        K::ExpiredSignature => "token expired".to_owned(),
                        K::ImmatureSignature => "token not valid yet (nbf)".to_owned(),
                        K::InvalidAudience => "token issued for another audience".to_owned(),
                        K::InvalidIssuer => "token issued by another issuer".to_owned(),
                        K::InvalidSignature => "invalid signature".to_owned(),
                        K::MissingRequiredClaim(c) => format!("missing claim {c}"),
                        other => format!("invalid token: {other:?}"),
                    });
                    // Only a bad signature may mean another key of the same kid fits.
                    if !matches!(e.kind(), K::InvalidSignature) {
                        break;
                    }
                }
            }
        }
        Err(last)
    }
}

/// Whether a bearer looks like a JWT (three base64url parts) rather than a personal access token
/// (43 base64url characters, no dots).
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_need_https_or_loopback() {
        assert!(check_flags("https://id.example.com", "https://kb.example.com/mcp").is_ok());
        assert!(check_flags("http://127.0.0.1:9000", "http://127.0.0.1:8787/mcp").is_ok());
        assert!(check_flags("http://localhost:9000/realms/x", "http://[::1]:8787/mcp").is_ok());
        assert!(check_flags("http://id.example.com", "https://kb.example.com/mcp").is_err());
        assert!(check_flags("https://id.example.com", "http://kb.example.com/mcp").is_err());
        assert!(check_flags("https://id.example.com?x=1", "https://kb.example.com/mcp").is_err());
        assert!(check_flags("not a url", "https://kb.example.com/mcp").is_err());
        assert!(check_flags("https://id.example.com", "/mcp").is_err());
        assert!(check_flags("https://id.example.com", "https://kb.example.com/:mcp").is_err());
        assert!(check_flags("https://id.example.com", "https://kb.example.com/{x}").is_err());
        assert!(check_flags("https://id.example.com", "https://kb.example.com/mcp?a=1").is_err());
    }

    #[test]
    fn metadata_urls_insert_the_well_known_path() {
        let v =
            OAuthVerifier::new("https://id.example.com/", "https://kb.example.com/kb/mcp").unwrap();
        assert_eq!(
            v.metadata_url(),
            "https://kb.example.com/.well-known/oauth-protected-resource/kb/mcp"
        );
        assert_eq!(
            v.metadata_path(),
            "/.well-known/oauth-protected-resource/kb/mcp"
        );
        let urls: Vec<String> = v.discovery_urls().iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://id.example.com/.well-known/oauth-authorization-server",
                "https://id.example.com/.well-known/openid-configuration"
            ]
        );
        let v = OAuthVerifier::new("https://id.example.com/realms/kb", "https://kb.example.com")
            .unwrap();
        assert_eq!(
            v.metadata_url(),
            "https://kb.example.com/.well-known/oauth-protected-resource"
        );
        let urls: Vec<String> = v.discovery_urls().iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://id.example.com/.well-known/oauth-authorization-server/realms/kb",
                "https://id.example.com/.well-known/openid-configuration/realms/kb",
                "https://id.example.com/realms/kb/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn scope_claims_map_to_kb_scopes() {
        let c: Claims = serde_json::from_value(serde_json::json!({
            "sub": "a", "scope": "openid kb:read kb:search offline_access kb:root"
        }))
        .unwrap();
        assert_eq!(granted_scopes(&c), vec![Scope::Read, Scope::Search]);
        let c: Claims = serde_json::from_value(
            serde_json::json!({"sub": "a", "scp": ["kb:write", "User.Read"]}),
        )
        .unwrap();
        assert_eq!(granted_scopes(&c), vec![Scope::Write]);
        let c: Claims = serde_json::from_value(serde_json::json!({"sub": "a"})).unwrap();
        assert!(granted_scopes(&c).is_empty());
    }

    #[test]
    fn key_sets_keep_only_public_signature_keys() {
        let doc = serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "enc", "use": "enc", "alg": "RSA-OAEP", "n": "sXch", "e": "AQAB"},
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "sig", "use": "sig", "alg": "RS256", "n": "sXch", "e": "AQAB"},
            {"kty": "weird", "kid": "x"}
        ]});
        let keys = parse_jwks(&doc);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("sig"));
        assert!(keys[0].fits(Algorithm::RS256));
        assert!(!keys[0].fits(Algorithm::ES256));
        assert!(
            !keys[0].fits(Algorithm::PS256),
            "the JWK's alg binds the key"
        );
    }

    #[test]
    fn jwt_shape() {
        assert!(looks_like_jwt("a.b.c"));
        assert!(!looks_like_jwt(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"
        ));
        assert!(!looks_like_jwt("a.b"));
    }
}
