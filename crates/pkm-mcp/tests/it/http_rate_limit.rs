//! Rate limits over HTTP (contract §9, ADR-0013 "Streamable HTTP behaviour"): a token
//! bucket per token, every tool call counted (also inside a batch), HTTP 429 with `Retry-After`
//! and RateLimited (-32003) with `data.retry_after_seconds`, refill, and per-scope tiers.
//! `MCP_RATE_LIMIT_*` parsing is unit-tested in `http::rate`.

// Test code, helpers included: a failed step should stop the test where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;

use common::{Options, Reply, TestServer, call_request, example_vault};
use pkm_mcp::http::{HttpConfig, Limit, RateLimits};
use pkm_mcp::scope::Scope;
use serde_json::json;

/// A refill so slow that it never matters within a test.
const NEVER: f64 = 0.001;

async fn server(limits: RateLimits) -> TestServer {
    let opts = Options {
        config: HttpConfig {
            rate_limits: limits,
            ..HttpConfig::default()
        },
        ..Options::default()
    };
    TestServer::start_with(&example_vault(), opts).await
}

fn limits(burst: u32, per_second: f64) -> RateLimits {
    RateLimits {
        default: Limit { burst, per_second },
        tiers: BTreeMap::new(),
    }
}

fn assert_limited(r: &Reply) {
    assert_eq!(r.status, 429, "{}", r.json);
    assert_eq!(r.error_code(), Some(-32003));
    assert_eq!(r.json["error"]["data"]["kind"], "RateLimited");
    let header: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("whole seconds");
    assert!(header >= 1);
    assert_eq!(
        r.json["error"]["data"]["retry_after_seconds"].as_u64(),
        Some(header)
    );
}

#[tokio::test]
async fn an_exhausted_burst_answers_429_with_retry_after() {
    let s = server(limits(3, NEVER)).await;
    let session = s.initialize(Some(&s.token)).await;
    for _ in 0..3 {
        let r = s
            .call(&s.token, &session, "kb_index_status", json!({}))
            .await;
        assert_eq!(r.status, 200, "{}", r.json);
    }
    let r = s
        .call(&s.token, &session, "kb_index_status", json!({}))
        .await;
    assert_limited(&r);
    assert_eq!(r.json["id"], 1);

    // Not counted: initialize, tools/list, /health. Other tokens have their own bucket.
    assert_eq!(
        s.post(&common::initialize_request(), Some(&s.token), None)
            .await
            .status,
        200
    );
    assert_eq!(
        s.post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            Some(&s.token),
            Some(&session)
        )
        .await
        .status,
        200
    );
    assert_eq!(s.send(s.client.get(s.url("/health"))).await.status, 200);
    let other = s.token_with("other", &Scope::PERSONAL);
    let other_session = s.initialize(Some(&other)).await;
    assert_eq!(
        s.call(&other, &other_session, "kb_index_status", json!({}))
            .await
            .status,
        200
    );
    assert_limited(
        &s.call(&s.token, &session, "kb_index_status", json!({}))
            .await,
    );
    let metrics = s.metrics.render();
    assert!(
        metrics
            .lines()
            .any(|l| l == "stratum_mcp_rate_limited_total 2"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == "stratum_mcp_http_responses_total{status=\"429\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn every_call_in_a_batch_counts() {
    let s = server(limits(2, NEVER)).await;
    let session = s.initialize(Some(&s.token)).await;
    let batch = json!([
        call_request(1, "kb_index_status", json!({})),
        call_request(2, "kb_vault_info", json!({})),
        call_request(3, "kb_index_status", json!({}))
    ]);
    let r = s.post(&batch, Some(&s.token), Some(&session)).await;
    assert_eq!(r.status, 429, "{}", r.json);
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1);
    assert!(r.json[0]["result"].is_object());
    assert!(r.json[1]["result"].is_object());
    assert_eq!(r.json[2]["id"], 3);
    assert_eq!(r.json[2]["error"]["code"], -32003);
    assert_eq!(
        r.json[2]["error"]["data"]["retry_after_seconds"].as_u64(),
        Some(retry)
    );
}

#[tokio::test]
async fn the_bucket_refills() {
    // One call, refilled every half second.
    let s = server(limits(1, 2.0)).await;
    let session = s.initialize(Some(&s.token)).await;
    assert_eq!(
        s.call(&s.token, &session, "kb_index_status", json!({}))
            .await
            .status,
        200
    );
    let r = s
        .call(&s.token, &session, "kb_index_status", json!({}))
        .await;
    assert_limited(&r);
    assert_eq!(r.header("retry-after"), Some("1"));
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        s.call(&s.token, &session, "kb_index_status", json!({}))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_scope_tier_can_be_tighter_than_the_default() {
    let s = server(limits(100, 100.0).with_tier(
        Scope::Write,
        Limit {
            burst: 1,
            per_second: NEVER,
        },
    ))
    .await;
    let session = s.initialize(Some(&s.token)).await;
    let write = |n: u32| {
        s.call(
            &s.token,
            &session,
            "kb_write_page",
            json!({"path": format!("inbox/tier {n}.md"), "content": "x\n"}),
        )
    };
    assert_eq!(write(1).await.status, 200);
    let r = write(2).await;
    assert_limited(&r);
    assert!(
        r.json["error"]["data"]["retry_after_seconds"]
            .as_u64()
            .unwrap()
            > 60,
        "the write tier refills slowly"
    );
    assert!(
        !s.vault.join("inbox/tier 2.md").exists(),
        "a limited call does nothing"
    );
    // Reads are in another tier and still flow.
    for _ in 0..5 {
        assert_eq!(
            s.call(
                &s.token,
                &session,
                "kb_get_page",
                json!({"path": "inbox/tier 1.md"})
            )
            .await
            .status,
            200
        );
    }
}
