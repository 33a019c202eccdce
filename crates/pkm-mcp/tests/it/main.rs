//! The integration tests of pkm-mcp, one binary (one link of the whole server instead of one per
//! file, as ripgrep and rust-analyzer do). Each module is one area; `common` is their harness.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

mod beneath;
mod common;
mod contract;
mod crash;
mod dialects;
mod docs;
mod docs_commands;
mod edit_tools;
mod http_fleet;
mod http_oauth;
mod http_rate_limit;
mod http_scope;
mod http_transport;
mod http_vaults;
mod listings;
mod move_page;
mod properties;
mod protocol;
mod search_meaning;
mod shared_vault;
