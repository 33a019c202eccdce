//! Shared harness of the integration tests: an in-process HTTP server over a temp copy of the
//! example vault (`http`), the real binary over stdio (`stdio`), and vault helpers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

// Each test binary uses part of the harness.
#![allow(dead_code)]

#[path = "../../../../tests/support/copy_dir.rs"]
mod copy_dir;
pub mod http;
pub mod stdio;

pub use copy_dir::copy_dir;

pub use http::*;

/// A temp dir holding a copy of the example vault at `<dir>/vault`.
pub fn temp_example_vault() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&example_vault(), &dir.path().join("vault"));
    dir
}
