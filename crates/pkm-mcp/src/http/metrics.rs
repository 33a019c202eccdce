//! Prometheus text exposition for `--metrics-bind` (contract §12: optional, on a separate listener,
//! for operators): requests by status, JSON-RPC errors by code, a latency histogram and rate-limit
//! rejections, kept in atomics.

use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::errors::Kind;

/// Upper bounds (seconds) of the latency histogram buckets; `+Inf` is implied.
const LATENCY_BOUNDS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Statuses counted by name; everything else is counted as "other".
const STATUSES: [u16; 15] = [
    200, 202, 204, 400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 503, 0,
];
/// Every kind, for the errors-by-code counters.
const KINDS: [Kind; 12] = [
    Kind::ParseError,
    Kind::InvalidRequest,
    Kind::MethodNotFound,
    Kind::InvalidArgs,
    Kind::Internal,
    Kind::External,
    Kind::NotFound,
    Kind::Conflict,
    Kind::RateLimited,
    Kind::ScopesDenied,
    Kind::VaultLocked,
    Kind::Unauthenticated,
];

/// The HTTP door's counters.
#[derive(Default)]
pub struct Metrics {
    requests: AtomicU64,
    by_status: [AtomicU64; STATUSES.len()],
    errors: [AtomicU64; KINDS.len()],
    rate_limited: AtomicU64,
    latency_buckets: [AtomicU64; LATENCY_BOUNDS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
}

impl Metrics {
    /// Counts one finished HTTP request.
    pub fn observe(&self, status: u16, latency: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let slot = STATUSES
            .iter()
            .position(|s| *s == status)
            .unwrap_or(STATUSES.len() - 1);
        if let Some(c) = self.by_status.get(slot) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let secs = latency.as_secs_f64();
        for (bound, c) in LATENCY_BOUNDS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros.fetch_add(
            u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts one JSON-RPC error answered.
    pub fn error(&self, kind: Kind) {
        // Unavailable is an External error on the wire, and counted as one.
        let kind = match kind {
            Kind::Unavailable => Kind::External,
            k => k,
        };
        if let Some(c) = KINDS
            .iter()
            .position(|k| *k == kind)
            .and_then(|i| self.errors.get(i))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if kind == Kind::RateLimited {
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP stratum_mcp_http_requests_total HTTP requests answered."
        );
        let _ = writeln!(out, "# TYPE stratum_mcp_http_requests_total counter");
        let _ = writeln!(
            out,
            "stratum_mcp_http_requests_total {}",
            get(&self.requests)
        );
        let _ = writeln!(
            out,
            "# HELP stratum_mcp_http_responses_total HTTP responses by status."
        );
        let _ = writeln!(out, "# TYPE stratum_mcp_http_responses_total counter");
        for (s, c) in STATUSES.iter().zip(&self.by_status) {
            let label = if *s == 0 {
                "other".to_owned()
            } else {
                s.to_string()
            };
            let _ = writeln!(
                out,
                "stratum_mcp_http_responses_total{{status=\"{label}\"}} {}",
                get(c)
            );
        }
        let _ = writeln!(
            out,
            "# HELP stratum_mcp_jsonrpc_errors_total JSON-RPC errors answered, by code and kind."
        );
        let _ = writeln!(out, "# TYPE stratum_mcp_jsonrpc_errors_total counter");
        for (k, c) in KINDS.iter().zip(&self.errors) {
            let _ = writeln!(
                out,
                "stratum_mcp_jsonrpc_errors_total{{code=\"{}\",kind=\"{}\"}} {}",
                k.code(),
                k.name(),
                get(c)
            );
        }
        let _ = writeln!(
            out,
            "# HELP stratum_mcp_rate_limited_total Tool calls refused by the rate limiter."
        );
        let _ = writeln!(out, "# TYPE stratum_mcp_rate_limited_total counter");
        let _ = writeln!(
            out,
            "stratum_mcp_rate_limited_total {}",
            get(&self.rate_limited)
        );
        let _ = writeln!(
            out,
            "# HELP stratum_mcp_http_request_duration_seconds HTTP request latency."
        );
        let _ = writeln!(
            out,
            "# TYPE stratum_mcp_http_request_duration_seconds histogram"
        );
        for (bound, c) in LATENCY_BOUNDS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "stratum_mcp_http_request_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                get(c)
            );
        }
        let count = get(&self.latency_count);
        let _ = writeln!(
            out,
            "stratum_mcp_http_request_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "stratum_mcp_http_request_duration_seconds_sum {}",
            get(&self.latency_sum_micros) as f64 / 1e6
        );
        let _ = writeln!(
            out,
            "stratum_mcp_http_request_duration_seconds_count {count}"
        );
        out
    }
}

/// `GET /metrics` on the metrics listener.
pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(metrics)
}

async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        )],
        metrics.render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_cumulative_buckets() {
        let m = Metrics::default();
        m.observe(200, Duration::from_millis(3));
        m.observe(429, Duration::from_millis(300));
        m.observe(418, Duration::from_secs(20));
        m.error(Kind::RateLimited);
        m.error(Kind::NotFound);
        let text = m.render();
        for line in [
            "stratum_mcp_http_requests_total 3",
            "stratum_mcp_http_responses_total{status=\"200\"} 1",
            "stratum_mcp_http_responses_total{status=\"429\"} 1",
            "stratum_mcp_http_responses_total{status=\"other\"} 1",
            "stratum_mcp_jsonrpc_errors_total{code=\"-32003\",kind=\"RateLimited\"} 1",
            "stratum_mcp_jsonrpc_errors_total{code=\"-32001\",kind=\"NotFound\"} 1",
            "stratum_mcp_rate_limited_total 1",
            "stratum_mcp_http_request_duration_seconds_bucket{le=\"0.005\"} 1",
            "stratum_mcp_http_request_duration_seconds_bucket{le=\"0.5\"} 2",
            "stratum_mcp_http_request_duration_seconds_bucket{le=\"10\"} 2",
            "stratum_mcp_http_request_duration_seconds_bucket{le=\"+Inf\"} 3",
            "stratum_mcp_http_request_duration_seconds_count 3",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
