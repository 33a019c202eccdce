//! Shared harness of the HTTP tests: an in-process server on 127.0.0.1:0 over a temp copy of the
//! example vault, and a small JSON-RPC client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

// Each test binary uses part of the harness.
#![allow(dead_code)]

pub mod http;

pub use http::*;
