//! DNS-rebinding defence (ADR-0013 "HTTP security"): the Host header must name this server
//! (loopback names by default, plus `--allowed-host`), and a present Origin must be allowed
//! (loopback origins by default, plus `--allowed-origin`). Checked before anything else.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{HttpState, error_response};
use crate::errors::{Kind, McpError};

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

pub(super) struct AllowList {
    /// Lower-case `--allowed-host` entries.
    hosts: Vec<String>,
    /// Normalised `--allowed-origin` entries.
    origins: Vec<String>,
}

/// Splits `host[:port]` (with `[v6]` literals) into the host part, lower-cased.
fn host_part(value: &str) -> String {
    let v = value.trim().to_ascii_lowercase();
    if v.starts_with('[') {
        return match v.find(']') {
            Some(end) => v.get(..=end).unwrap_or(&v).to_owned(),
            None => v,
        };
    }
    match v.rsplit_once(':') {
        Some((h, port)) if !h.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            h.to_owned()
        }
        _ => v,
    }
}

/// `scheme://host[:port]` lower-cased, without a trailing slash.
fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

impl AllowList {
    pub(super) fn new(hosts: &[String], origins: &[String]) -> AllowList {
        AllowList {
            hosts: hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            origins: origins
                .iter()
                .map(|o| normalize_origin(o))
                .filter(|o| !o.is_empty())
                .collect(),
        }
    }

    pub(super) fn host_allowed(&self, host: &str) -> bool {
        let full = host.trim().to_ascii_lowercase();
        let name = host_part(&full);
        LOOPBACK_HOSTS.contains(&name.as_str())
            || self.hosts.iter().any(|h| *h == full || *h == name)
    }

    pub(super) fn origin_allowed(&self, origin: &str) -> bool {
        let origin = normalize_origin(origin);
        if self.origins.contains(&origin) {
            return true;
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        (scheme == "http" || scheme == "https")
            && !rest.contains('/')
            && LOOPBACK_HOSTS.contains(&host_part(rest).as_str())
    }
}

/// Middleware: 403 with a JSON-RPC error body for a foreign Host or Origin.
pub(super) async fn check(State(state): State<HttpState>, req: Request, next: Next) -> Response {
    let allowed = &state.shared.origin;
    // HTTP/1.1 sends Host; HTTP/2 puts the authority in the URI.
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
    if !host.as_deref().is_some_and(|h| allowed.host_allowed(h)) {
        tracing::warn!(
            host = host.as_deref().unwrap_or(""),
            "rejected a request for a foreign Host"
        );
        let e = McpError::new(Kind::InvalidRequest, "Host not allowed")
            .with_hint("Connect by a loopback name, or start the server with --allowed-host NAME.");
        return error_response(StatusCode::FORBIDDEN, &e);
    }
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| allowed.origin_allowed(o))
    {
        tracing::warn!(origin = ?origin, "rejected a request from a foreign Origin");
        let e = McpError::new(Kind::InvalidRequest, "Origin not allowed")
            .with_hint("Start the server with --allowed-origin URL to accept this origin.");
        return error_response(StatusCode::FORBIDDEN, &e);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let g = AllowList::new(&["kb.example.org".into(), "10.0.0.2:8443".into()], &[]);
        for ok in [
            "localhost",
            "localhost:8787",
            "127.0.0.1:1",
            "[::1]:8787",
            "[::1]",
            "KB.example.org:443",
            "10.0.0.2:8443",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "evil.com:8787",
            "localhost.evil.com",
            "10.0.0.2:80",
            "127.0.0.2",
            "",
            "[::2]:1",
        ] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let g = AllowList::new(&[], &["https://app.example.org/".into()]);
        for ok in [
            "http://localhost:3000",
            "https://127.0.0.1",
            "http://[::1]:9",
            "https://app.example.org",
        ] {
            assert!(g.origin_allowed(ok), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.com",
            "https://app.example.org.evil.com",
            "file://localhost",
            "http://localhost.evil.com",
        ] {
            assert!(!g.origin_allowed(bad), "{bad}");
        }
    }
}
