//! HTTP load generator for the benchmark: N concurrent MCP sessions (each its own `initialize`),
//! each calling `kb_search` back to back for a fixed time, with a bearer token. Prints one JSON
//! line: `{"clients":N,"calls":C,"seconds":S,"calls_per_s":R}`. Runs on one thread so that it takes
//! one core at most from the server it measures (a Python client could not keep up with it).
//!
//! `http_load URL TOKEN CLIENTS SECONDS QUERIES_FILE` (one query per line).

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

type Res<T> = Result<T, String>;

fn headers(token: &str, session: Option<&str>) -> Res<HeaderMap> {
    let mut h = HeaderMap::new();
    let v = |s: &str| HeaderValue::from_str(s).map_err(|e| e.to_string());
    h.insert("authorization", v(&format!("Bearer {token}"))?);
    h.insert("content-type", v("application/json")?);
    h.insert("accept", v("application/json")?);
    if let Some(s) = session {
        h.insert("mcp-session-id", v(s)?);
        h.insert("mcp-protocol-version", v("2025-06-18")?);
    }
    Ok(h)
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    h: &HeaderMap,
    body: &Value,
) -> Res<reqwest::Response> {
    let r = client
        .post(url)
        .headers(h.clone())
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !matches!(r.status().as_u16(), 200 | 202) {
        return Err(format!("HTTP {}", r.status()));
    }
    Ok(r)
}

/// One session: initialize, then search until `stop`. Returns the number of answered calls.
async fn session(
    url: String,
    token: String,
    queries: Vec<String>,
    offset: usize,
    stop: Instant,
) -> Res<u64> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .map_err(|e| e.to_string())?;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http_load", "version": "0"}}});
    let r = post(&client, &url, &headers(&token, None)?, &init).await?;
    let sid = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let _ = r.bytes().await;
    let h = headers(&token, sid.as_deref())?;
    post(
        &client,
        &url,
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;
    let mut calls = 0u64;
    let mut i = offset;
    while Instant::now() < stop {
        let q = &queries[i % queries.len()];
        i += 7;
        let body = json!({"jsonrpc": "2.0", "id": calls + 1, "method": "tools/call",
            "params": {"name": "kb_search", "arguments": {"query": q}}});
        let bytes = post(&client, &url, &h, &body)
            .await?
            .bytes()
            .await
            .map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if let Some(e) = v.get("error") {
            return Err(format!("kb_search failed: {e}"));
        }
        calls += 1;
    }
    Ok(calls)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, token, clients, seconds, queries] = args.as_slice() else {
        eprintln!("usage: http_load URL TOKEN CLIENTS SECONDS QUERIES_FILE");
        std::process::exit(2);
    };
    let (Ok(clients), Ok(seconds)) = (clients.parse::<usize>(), seconds.parse::<f64>()) else {
        eprintln!("http_load: CLIENTS and SECONDS must be numbers");
        std::process::exit(2);
    };
    let queries: Vec<String> = match std::fs::read_to_string(queries) {
        Ok(t) => t
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        Err(e) => {
            eprintln!("http_load: cannot read the queries: {e}");
            std::process::exit(2);
        }
    };
    if queries.is_empty() {
        eprintln!("http_load: no queries");
        std::process::exit(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("http_load: {e}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        let start = Instant::now();
        let stop = start + Duration::from_secs_f64(seconds);
        let tasks: Vec<_> = (0..clients)
            .map(|i| {
                tokio::spawn(session(
                    url.clone(),
                    token.clone(),
                    queries.clone(),
                    i,
                    stop,
                ))
            })
            .collect();
        let mut calls = 0;
        for t in tasks {
            calls += t.await.map_err(|e| e.to_string())??;
        }
        Ok::<_, String>((calls, start.elapsed().as_secs_f64()))
    });
    match result {
        Ok((calls, secs)) => println!(
            "{}",
            json!({"clients": clients, "calls": calls, "seconds": secs, "calls_per_s": calls as f64 / secs})
        ),
        Err(e) => {
            eprintln!("http_load: {e}");
            std::process::exit(1);
        }
    }
}
