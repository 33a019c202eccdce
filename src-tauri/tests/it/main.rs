//! The integration tests of stratum-app, one binary (one link instead of one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

#[path = "../../../tests/support/copy_dir.rs"]
mod copy_dir;

mod batch;
mod commands;
mod move_props;
mod reference;
mod resolution_props;
mod watcher;
mod write_path;
