//! The command surface of the Stratum desktop app, as a plain library: the functions the desktop
//! shell and `pkm-mcp` both call. Business logic lives here once; the doors above it only
//! validate, call one command and shape the answer.
//!
//! Architecture invariant: nothing here knows MCP or JSON-RPC; every path argument is a
//! `VaultPath`.

pub mod app;
pub mod batch;
mod beneath;
pub mod commands;
mod convert;
pub mod dto;
mod faults;
pub mod hooks;
mod journal;
pub mod lock;
mod pending;
mod queue;
mod read_failure;
mod resolver;
pub mod scan;
pub mod watcher;
pub mod write_path;
mod writer;

pub use app::{App, AppConfig};
pub use lock::VaultLock;
pub use watcher::WatchMode;

/// The tracing target of milestones worth telling a connected client about (an index rebuild's
/// start, progress and end). The MCP server forwards these, with every warning, as
/// `notifications/message`.
pub const MILESTONE: &str = "stratum::milestone";
pub use hooks::SaveHooks;
